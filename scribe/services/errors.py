"""What Scribe refuses; each is a clear message and nothing was changed."""

from __future__ import annotations


class ScribeError(Exception):
    """A Scribe request was refused; nothing was changed."""


class NoSuchSession(ScribeError):
    """No session has that id."""


class NotApprovable(ScribeError):
    """The session has no proposed, valid draft to approve."""


class SessionClosed(ScribeError):
    """The session is approved or its cap is spent: it takes no more messages."""


class SessionBusy(ScribeError):
    """A reply to this session is still running."""


class NotYours(ScribeError):
    """The session was opened by another console user."""
