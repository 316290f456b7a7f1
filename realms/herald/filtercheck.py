"""Match events against a sync filter without building matchers for every event: a Synapse
module.

Every ``/sync`` answer runs each new event through two filters (the room filter and the
timeline filter), so with twenty agents each message is checked forty times.
Synapse's ``Filter._check`` builds a dictionary of five closures per event, looks each
field's allowed and disallowed values up by name and maps the closures over them; flat out
that was ~6 % of the homeserver's time (``bench/bus.py``, py-spy), though the runtime's
filter only names event types.

Here the same checks are written out: the same fields in the same order (rooms, senders,
types, labels, relation types, then ``contains_url``), each value compared with the same
expression, so an event is kept exactly when Synapse would keep it. An event's fields are
read through its properties rather than ``get()``: the event is a Rust object, whose
``get()`` converts the field anew each time. The event's relation is only parsed when the
filter names relation types (parsing it has no effect of its own). Presence states take
Synapse's own path.

Synapse imports this module in its own process: it must not import Django.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from synapse.api import filtering
from synapse.api.constants import EventContentFields, EventTypes
from synapse.api.presence import UserPresenceState
from synapse.events import EventBase, relation_from_event

from realms.herald.patchmodule import ConfigTimePatch

# Set on the class once applied, to Synapse's own ``_check`` (what the tests compare with).
SYNAPSE_CHECK = "_bearpit_synapse_check"
_LABELS = EventContentFields.LABELS


def _allowed(value: Any, allowed: Any, disallowed: Any) -> bool:
    """A field's test for an exact-match field: no disallowed value, one allowed if listed."""
    for v in disallowed:
        if value == v:
            return False
    if allowed is not None:
        # A loop, not any() over a generator: this runs for every event of every sync.
        for v in allowed:  # noqa: SIM110
            if value == v:
                return True
        return False
    return True


def _check(self: filtering.Filter, event: Any, presence_check: Any) -> bool:
    if isinstance(event, UserPresenceState):
        return bool(presence_check(self, event))
    content: Any
    sender: Any
    ev_type: Any
    room_id: Any
    if isinstance(event, EventBase):
        # An event's properties cost ~0.05 µs where its get() converts the field anew
        # (~1.5 µs). They hold the same values but one: a room version that derives the
        # room id from the create event (12) has none in that event, as get() says.
        content = event.content
        sender = event.sender
        ev_type = event.type
        room_id = event.get("room_id", None) if ev_type == EventTypes.Create else event.room_id
    else:
        content = event.get("content")
        sender = event.get("sender", None)
        ev_type = event.get("type", None)
        room_id = event.get("room_id", None)
    if not isinstance(content, Mapping):
        content = {}
    if not sender:
        sender = content.get("user_id")

    if not _allowed(room_id, self.rooms, self.not_rooms):
        return False
    if not _allowed(sender, self.senders, self.not_senders):
        return False

    wildcard = filtering._matches_wildcard
    for v in self.not_types:
        if wildcard(ev_type, v):
            return False
    if self.types is not None:
        # The runtime's timeline filter lists types: a loop here too, as in _allowed.
        for v in self.types:
            if wildcard(ev_type, v):
                break
        else:
            return False

    if self.not_labels or self.labels is not None:
        labels = content.get(_LABELS, [])
        for v in self.not_labels:
            if v in labels:
                return False
        if self.labels is not None and not any(v in labels for v in self.labels):
            return False

    if self.not_rel_types or self.rel_types is not None:
        rel_type = None
        if isinstance(event, EventBase):
            relation = relation_from_event(event)
            if relation:
                rel_type = relation.rel_type
        if not _allowed(rel_type, self.rel_types, self.not_rel_types):
            return False

    contains_url = self.contains_url
    return contains_url is None or contains_url == isinstance(content.get("url"), str)


def apply() -> None:
    """Replace ``Filter._check`` with the written-out checks."""
    if getattr(filtering.Filter, SYNAPSE_CHECK, None) is not None:
        return
    original = filtering.Filter._check

    def check(self: filtering.Filter, event: Any) -> bool:
        return _check(self, event, original)

    filtering.Filter._check = check  # type: ignore[method-assign]
    setattr(filtering.Filter, SYNAPSE_CHECK, original)


class FilterCheck(ConfigTimePatch):
    """The module Synapse loads."""

    patch = staticmethod(apply)
