"""Does a replayed request match the recorded one? What legitimately varies is normalised.

Only what the agent's model sees is compared: the ``messages``, the ``tools`` offered and
how they may be used (``tool_choice``, ``parallel_tool_calls``, ``response_format``).
The model, the output bound, sampling and streaming are the key's and the provider's
business, so a replay on another provider still matches.

Inside every string, what differs between two runs of the same world is replaced by a
placeholder before comparing:

- the two realms' ids (the recorded realm's and the replaying realm's) → ``<realm>``;
- ISO-8601 date-times and dates, and clock times (``12:34`` or ``12:34:56``) → ``<time>``;
- Unix times in seconds or milliseconds (10 or 13 digits) → ``<epoch>``;
- UUIDs → ``<uuid>``; Matrix event ids (``$…``) → ``<event>``; room ids (``!…:server``) →
  ``<room>``; hexadecimal runs of 12 or more characters (random tokens, digests) → ``<hex>``.

A recorded answer is replayed as it was, so ids the model itself produced (tool-call ids)
come back the same and need no normalising.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

COMPARED = ("messages", "tools", "tool_choice", "parallel_tool_calls", "response_format")

_PATTERNS = (
    (
        re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?"),
        "<time>",
    ),
    (re.compile(r"\b\d{4}-\d{2}-\d{2}\b"), "<time>"),
    (re.compile(r"\b\d{1,2}:\d{2}(:\d{2}(\.\d+)?)?\b"), "<time>"),
    (
        re.compile(
            r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"
        ),
        "<uuid>",
    ),
    (re.compile(r"\$[A-Za-z0-9_\-+/=]{16,}(:[A-Za-z0-9.\-]+)?"), "<event>"),
    (re.compile(r"![A-Za-z0-9]{8,}:[A-Za-z0-9.\-]+"), "<room>"),
    (re.compile(r"\b\d{13}\b|\b1\d{9}\b"), "<epoch>"),
    (re.compile(r"\b[0-9a-f]{12,}\b"), "<hex>"),
)


def normalise_text(text: str, realm_ids: tuple[str, ...]) -> str:
    # Longest id first, so a realm id that is a prefix of another never splits it.
    for realm_id in sorted({r for r in realm_ids if r}, key=len, reverse=True):
        text = text.replace(realm_id, "<realm>")
    for pattern, placeholder in _PATTERNS:
        text = pattern.sub(placeholder, text)
    return text


def _normalise(value: Any, realm_ids: tuple[str, ...]) -> Any:
    if isinstance(value, str):
        return normalise_text(value, realm_ids)
    if isinstance(value, list):
        return [_normalise(v, realm_ids) for v in value]
    if isinstance(value, dict):
        return {k: _normalise(v, realm_ids) for k, v in value.items()}
    return value


def comparable(request: Any, realm_ids: tuple[str, ...]) -> dict[str, Any]:
    """The part of a request body that must match, normalised."""
    body = request if isinstance(request, dict) else {}
    return {name: _normalise(body.get(name), realm_ids) for name in COMPARED}


@dataclass(frozen=True)
class Difference:
    path: str  # e.g. messages[3].content
    recorded: str
    replayed: str

    def line(self) -> str:
        return f"{self.path}: recorded {self.recorded} / now {self.replayed}"


def _show(value: Any, at: int | None = None, width: int = 60) -> str:
    if value is _MISSING:
        return "(nothing)"
    text = value if isinstance(value, str) else repr(value)
    if at is None or len(text) <= width:
        return repr(text[:width] + ("…" if len(text) > width else ""))
    start = max(0, at - width // 3)
    piece = text[start : start + width]
    return repr(("…" if start else "") + piece + ("…" if start + width < len(text) else ""))


_MISSING = object()


def first_difference(recorded: Any, replayed: Any, path: str = "") -> Difference | None:
    """Where two JSON values first differ (depth first, in order), shown briefly."""
    if isinstance(recorded, dict) and isinstance(replayed, dict):
        for key in list(recorded) + [k for k in replayed if k not in recorded]:
            found = first_difference(
                recorded.get(key, _MISSING), replayed.get(key, _MISSING), f"{path}.{key}"
            )
            if found is not None:
                return found
        return None
    if isinstance(recorded, list) and isinstance(replayed, list):
        for i in range(max(len(recorded), len(replayed))):
            found = first_difference(
                recorded[i] if i < len(recorded) else _MISSING,
                replayed[i] if i < len(replayed) else _MISSING,
                f"{path}[{i}]",
            )
            if found is not None:
                return found
        return None
    if recorded == replayed and type(recorded) is type(replayed):
        return None
    at: int | None = None
    if isinstance(recorded, str) and isinstance(replayed, str):
        at = next(
            (i for i, (a, b) in enumerate(zip(recorded, replayed, strict=False)) if a != b),
            min(len(recorded), len(replayed)),
        )
    return Difference(path.lstrip("."), _show(recorded, at), _show(replayed, at))
