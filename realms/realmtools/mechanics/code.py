"""``run_code``: Python in the caller's own sandbox view, brokered and recorded.

The Forge runs the code in a process that cannot see the runtime's credentials,
masks the agent's credentials (and the caller's realmtools token, passed in
here) out of what it printed and clips it. We record EXEC before and
EXEC_RESULT after, so the Chronicle shows every run and its outcome.
"""

from __future__ import annotations

import secrets
from typing import Any

from chronicle.kinds import Kind
from chronicle.services import record_event
from realms.forge.runcode import RunCodeError
from realms.forge.runcode import run_code as forge_run_code
from realms.forge.services import sandbox_alive
from realms.realmtools.context import Caller
from realms.realmtools.errors import Refusal

MAX_CODE = 16000
MASK = "[redacted]"
TIMEOUT_ANSWER = {"error": "the code did not finish in time", "exit_code": None, "output": ""}


def run_code(caller: Caller, code: str, *, bearer: str | None = None) -> dict[str, Any]:
    if not code.strip():
        raise Refusal("code is empty")
    if len(code) > MAX_CODE:
        raise Refusal(f"code is longer than {MAX_CODE} characters")
    if not sandbox_alive(caller.realm_id, caller.agent_id):
        raise Refusal("your sandbox is not running, so there is nowhere to run code")
    exec_id = secrets.token_hex(8)
    shown = code.replace(bearer, MASK) if bearer else code
    record_event(
        caller.realm_id, Kind.EXEC, {"id": exec_id, "agent": caller.agent_id, "code": shown}
    )
    result: dict[str, Any] = {"id": exec_id, "agent": caller.agent_id}
    try:
        # The Forge's own limit (BEARPIT_SANDBOX_EXEC_TIMEOUT, 90 s by default) applies.
        ran = forge_run_code(caller.realm_id, caller.agent_id, code, secrets=[bearer or ""])
    except RunCodeError as exc:
        # The sandbox went away between the check and the run.
        record_event(caller.realm_id, Kind.EXEC_RESULT, {**result, "exit_code": None, "output": ""})
        raise Refusal(str(exc)) from None
    if ran.timed_out:
        record_event(caller.realm_id, Kind.EXEC_RESULT, {**result, "exit_code": None, "output": ""})
        return dict(TIMEOUT_ANSWER)
    record_event(
        caller.realm_id,
        Kind.EXEC_RESULT,
        {**result, "exit_code": ran.exit_code, "output": ran.output},
    )
    return {"exit_code": ran.exit_code, "output": ran.output}
