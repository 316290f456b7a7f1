"""Refusals: a model's mistake, answered to the model as a tool result."""

from __future__ import annotations

from typing import Any


class Refusal(Exception):
    """The call was understood and refused; nothing changed.

    ``extra`` travels with the message in dict-shaped results (for example the
    failed check of a rejected machine act, or the verdict that already stands).
    """

    def __init__(self, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.message = message
        self.extra = extra

    def as_result(self) -> dict[str, Any]:
        return {"error": self.message, **self.extra}
