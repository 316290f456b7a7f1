"""Shared pieces of the package schema: the strict base model, bounded text types, durations."""

from __future__ import annotations

import re
from typing import Annotated, NoReturn

from pydantic import BaseModel, ConfigDict, Field, StringConstraints
from pydantic_core import PydanticCustomError

DURATION_PATTERN = r"^\d+(\.\d+)?\s*(s|m|h|d)$"
AGENT_ID_PATTERN = r"^[a-z0-9][a-z0-9-]*$"
COLOR_PATTERN = r"^#[0-9a-fA-F]{6}$"
# Both spellings of a granted tool: the current ``family_verb`` and the older ``family.verb``.
TOOL_NAME_PATTERN = r"^[a-z][a-z0-9]*[._][a-z][a-z0-9_]*$"

# What each pattern means, for error messages ("expected <this>; got …").
PATTERN_MEANINGS: dict[str, str] = {
    DURATION_PATTERN: "a duration such as 30s, 20m, 1h or 2d",
    AGENT_ID_PATTERN: "lowercase letters, digits and dashes, not starting with a dash",
    COLOR_PATTERN: "a colour as #RRGGBB",
    TOOL_NAME_PATTERN: "a tool name such as web_fetch",
}

_UNIT_SECONDS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_DURATION_RE = re.compile(DURATION_PATTERN)


def parse_duration(text: str) -> float:
    """Seconds in a duration string such as ``30s``, ``20m``, ``1.5h`` or ``2d``."""
    match = _DURATION_RE.match(text.strip())
    if match is None:
        raise ValueError(f"not a duration: {text!r}")
    return float(text.strip()[:-1].strip()) * _UNIT_SECONDS[match.group(2)]


def fail(expected: str) -> NoReturn:
    """Raise a validation error that the loader renders as "expected <expected>; got …"."""
    raise PydanticCustomError("expected", "expected {expected}", {"expected": expected})


class Strict(BaseModel):
    """Base of every manifest model: unknown keys are errors and values are not coerced
    (``"3"`` is not a number, ``"yes"`` is not a boolean)."""

    model_config = ConfigDict(extra="forbid", strict=True)


ShortText = Annotated[str, StringConstraints(max_length=120)]
TagText = Annotated[str, StringConstraints(max_length=40)]
GoalText = Annotated[str, StringConstraints(max_length=1000)]
LongText = Annotated[str, StringConstraints(max_length=50000)]
Duration = Annotated[str, StringConstraints(max_length=20, pattern=DURATION_PATTERN)]
ToolName = Annotated[str, StringConstraints(pattern=TOOL_NAME_PATTERN)]
GoalList = Annotated[list[GoalText], Field(max_length=50)]
