"""``run_code``: Python in the caller's own sandbox view, brokered and recorded.

The Forge runs the code (in a process that cannot see the runtime's
credentials) and masks the agent's credentials in what it printed; we record
EXEC before and EXEC_RESULT after, clipped, with the caller's realmtools token
masked once more in case it travelled in through the code.
"""

from __future__ import annotations

import importlib
import secrets
from typing import Any

from chronicle.kinds import Kind
from chronicle.services import record_event
from realms.realmtools.context import Caller
from realms.realmtools.errors import Refusal

MAX_CODE = 16000
MAX_OUTPUT = 8000
TIMEOUT_S = 90
TIMEOUT_ANSWER = {"error": "the code did not finish in time", "exit_code": None, "output": ""}


def _forge_run_code(realm_id: str, agent_id: str, code: str, timeout: int) -> Any:
    # Imported when called: the Forge pulls in sandbox backends the server
    # does not otherwise need at start-up.
    forge = importlib.import_module("realms.forge.services")
    return forge.run_code(realm_id, agent_id, code, timeout=timeout)


def _mask(text: str, token: str | None) -> str:
    if token and len(token) >= 6:
        text = text.replace(token, "[redacted]")
    return text[:MAX_OUTPUT]


def run_code(caller: Caller, code: str, *, bearer: str | None = None) -> dict[str, Any]:
    if not code.strip():
        raise Refusal("code is empty")
    if len(code) > MAX_CODE:
        raise Refusal(f"code is longer than {MAX_CODE} characters")
    exec_id = secrets.token_hex(8)
    record_event(
        caller.realm_id, Kind.EXEC, {"id": exec_id, "agent": caller.agent_id, "code": code}
    )
    try:
        result = _forge_run_code(caller.realm_id, caller.agent_id, code, TIMEOUT_S)
    except TimeoutError:
        timed_out, exit_code, output = True, None, ""
    else:
        timed_out = bool(getattr(result, "timed_out", False))
        exit_code = getattr(result, "exit_code", None)
        output = _mask(str(getattr(result, "output", "") or ""), bearer)
    record_event(
        caller.realm_id,
        Kind.EXEC_RESULT,
        {
            "id": exec_id,
            "agent": caller.agent_id,
            "exit_code": None if timed_out else exit_code,
            "output": "" if timed_out else output,
        },
    )
    if timed_out:
        return dict(TIMEOUT_ANSWER)
    return {"exit_code": exit_code, "output": output}
