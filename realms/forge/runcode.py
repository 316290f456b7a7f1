"""run_code: Python in the caller's own sandbox view, unable to see its credentials."""

from __future__ import annotations

from collections.abc import Iterable
from threading import Event

from django.conf import settings

from realms.forge import layout
from realms.forge.backends import get_backend
from realms.forge.secrets import mask_secrets, secrets_in_birth_file
from realms.forge.services import live_sandbox, spec_for
from realms.forge.spec import ExecResult

OUTPUT_LIMIT = 8000
MAX_CODE_CHARS = 16000
CLIP_NOTE = "\n[output clipped]"


class RunCodeError(ValueError):
    """The call cannot run: no live sandbox, or code outside 1-16000 characters."""


def clip(text: str, limit: int = OUTPUT_LIMIT) -> str:
    if len(text) <= limit:
        return text
    return text[: limit - len(CLIP_NOTE)] + CLIP_NOTE


def run_code(
    realm_id: str,
    agent_id: str,
    code: str,
    timeout: float | None = None,
    secrets: Iterable[str] = (),
    cancel: Event | None = None,
) -> ExecResult:
    """Run ``code`` as the agent, in a new process with its home and the shared folder,
    its caps, no network, and ``~/.bearpit`` (the birth config) hidden. Output is
    stdout and stderr merged, the agent's credentials masked, clipped to 8,000 chars;
    at ``timeout`` seconds (default ``BEARPIT_SANDBOX_EXEC_TIMEOUT``, 90) the whole
    process tree is killed (and as soon as ``cancel`` is set, for a background job)."""
    if not code or len(code) > MAX_CODE_CHARS:
        raise RunCodeError(f"code: expected 1-{MAX_CODE_CHARS} characters; got {len(code)}")
    row = live_sandbox(realm_id, agent_id)
    if row is None:
        raise RunCodeError(f"agent {agent_id} of realm {realm_id} has no running sandbox")
    spec = spec_for(row)
    limit = settings.BEARPIT_SANDBOX_EXEC_TIMEOUT if timeout is None else timeout
    result = get_backend(row.backend).exec(spec, code, limit, cancel)
    known = [*secrets, *secrets_in_birth_file(layout.birth_path(realm_id, agent_id))]
    output = clip(mask_secrets(result.output, known))
    return ExecResult(exit_code=result.exit_code, output=output, timed_out=result.timed_out)
