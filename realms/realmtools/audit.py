"""The audit trail: every call by caller, tool and result *shape* — never content.

Payloads, notes, code, messages and fetched text stay out of the log; the
shape (``dict[error]``, ``dict[scoreboard]``, ``text[42]``) says what happened.
"""

from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger("realms.realmtools.audit")


def shape(result: Any) -> str:
    if isinstance(result, dict):
        return "dict[" + ",".join(sorted(str(k) for k in result)) + "]"
    if isinstance(result, str):
        return "error" if result.startswith("error:") else f"text[{len(result)}]"
    if isinstance(result, list):
        return f"list[{len(result)}]"
    return type(result).__name__


def record(realm_id: str, agent_id: str, role: str, tool: str, result: Any, ms: float) -> None:
    log.info(
        "call realm=%s agent=%s role=%s tool=%s result=%s ms=%.1f",
        realm_id,
        agent_id,
        role,
        tool,
        shape(result),
        ms,
    )


def failed(realm_id: str, agent_id: str, tool: str, exc: BaseException) -> None:
    log.error(
        "call realm=%s agent=%s tool=%s raised %s", realm_id, agent_id, tool, type(exc).__name__
    )
