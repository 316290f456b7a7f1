"""Tools a scenario may grant to individual agents, and how their grants are checked.

A grantable tool has a name, a description the model reads, a JSON Schema for its call
arguments, and a JSON Schema for the realm-level policy block ``spec.tools.<name>``. The
realmtools verbs (``run_code``, ``rule``, …) are not grantable: every wired agent has them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal

from realms.packages.errors import PackageError, expected, join_path

if TYPE_CHECKING:
    import jsonschema

# Verbs the realmtools server serves itself; a grant may never name or shadow one.
REALMTOOLS_VERBS = frozenset(
    {
        "submit_sealed",
        "reveal_status",
        "reveal",
        "tally",
        "turn_status",
        "send_private",
        "run_code",
        "remember",
        "recall",
        "score",
        "penalize",
        "flag",
        "scoreboard",
        "eliminate",
        "rule",
        "game_state",
        "game_act",
        "game_set",
        "game_declaration",
        "table_talk",
        "task_add",
        "task_list",
        "task_claim",
        "task_release",
        "task_complete",
        "task_block",
        "task_assign",
        "task_merge",
        # schedules and background jobs
        "schedule",
        "schedule_cancel",
        "schedule_list",
        "job_status",
        "job_output",
        "job_kill",
    }
)


@dataclass(frozen=True)
class GrantableTool:
    """Everything the platform needs to offer one granted tool."""

    name: str
    description: str
    params: dict[str, Any]
    config_schema: dict[str, Any]
    risk: Literal["contained", "elevated"] = "contained"
    cost_per_call_usd: float = 0.0
    legacy_names: tuple[str, ...] = field(default=())


WEB_FETCH = GrantableTool(
    name="web_fetch",
    description=(
        "Fetch a public web page over http or https and return its text. Give `contains` to "
        "get only the passages around a phrase instead of the whole page."
    ),
    params={
        "type": "object",
        "properties": {
            "url": {"type": "string", "description": "An http or https URL."},
            "contains": {
                "type": "string",
                "description": "Optional phrase; only the passages around it are returned.",
            },
        },
        "required": ["url"],
        "additionalProperties": False,
    },
    config_schema={
        "type": "object",
        "properties": {
            "allow": {
                "type": "array",
                "items": {"type": "string", "minLength": 1},
                "description": "Host patterns (fnmatch) that may be fetched; empty = any.",
            },
            "max_calls_per_agent": {
                "type": "integer",
                "minimum": 0,
                "description": "Calls each agent may make in a realm.",
            },
            "max_calls_by_agent": {
                "type": "object",
                "additionalProperties": {"type": "integer", "minimum": 0},
                "description": "Per-agent overrides of max_calls_per_agent.",
            },
        },
        "additionalProperties": False,
    },
    legacy_names=("web.fetch",),
)

GRANTABLE_TOOLS: MappingProxyType[str, GrantableTool] = MappingProxyType(
    {WEB_FETCH.name: WEB_FETCH}
)
_LEGACY = {legacy: tool.name for tool in GRANTABLE_TOOLS.values() for legacy in tool.legacy_names}


def canonical_tool_name(name: str) -> str:
    """The current spelling of a tool name: legacy ``family.verb`` becomes ``family_verb``."""
    if name in _LEGACY:
        return _LEGACY[name]
    return name.replace(".", "_", 1) if "." in name else name


def config_errors(tool: GrantableTool, config: Any, file: str, prefix: str) -> list[PackageError]:
    """Problems of a ``spec.tools.<name>`` block measured against the tool's config schema."""
    import jsonschema  # a fifth of a second to import; only a package that configures a tool

    validator = jsonschema.Draft202012Validator(tool.config_schema)
    out: list[PackageError] = []
    for error in sorted(validator.iter_errors(config), key=lambda e: [str(p) for p in e.path]):
        path = join_path(prefix, *[p if isinstance(p, int) else str(p) for p in error.path])
        if error.validator == "additionalProperties" and isinstance(error.instance, dict):
            allowed = set(error.schema.get("properties", {}))
            for extra in sorted(k for k in error.instance if k not in allowed):
                out.append(
                    PackageError(file=file, field=join_path(path, extra), message="unknown field")
                )
            continue
        wanted = _expectation(error)
        if wanted is None:
            out.append(PackageError(file=file, field=path, message=error.message))
        else:
            out.append(expected(file, path, wanted, error.instance))
    return out


_JSON_TYPES = {
    "array": "a list",
    "object": "an object",
    "integer": "a whole number",
    "number": "a number",
    "string": "a string",
    "boolean": "true or false",
}


def _expectation(error: jsonschema.ValidationError) -> str | None:
    value = error.validator_value
    if error.validator == "type" and isinstance(value, str):
        return _JSON_TYPES.get(value, value)
    if error.validator == "minimum":
        return f"a number of at least {value}"
    if error.validator == "maximum":
        return f"a number of at most {value}"
    if error.validator == "minLength":
        return "a non-empty string" if value == 1 else f"at least {value} characters"
    if error.validator == "enum" and isinstance(value, list):
        return "one of " + ", ".join(str(v) for v in value)
    return None
