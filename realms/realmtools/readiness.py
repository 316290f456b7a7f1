"""Whether each tool an agent can be given would work now, checked without a realm.

Every tool reaches the agent through the realmtools server, so none is ready while its
socket does not answer; ``run_code`` runs in the agent's sandbox as well, so it also
needs the configured sandbox backend. Granted tools (``web_fetch``) run on the host.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass
from typing import Literal

from realms.forge.readiness import Readiness
from realms.packages.tools import GRANTABLE_TOOLS
from realms.realmtools.catalogue import RULES

CONNECT_TIMEOUT_S = 0.5


@dataclass(frozen=True)
class ToolReadiness:
    name: str
    kind: Literal["realmtool", "granted"]
    ready: bool
    reason: str | None = None


def server_problem() -> str | None:
    """Why the realmtools server cannot be reached, or None when its socket answers."""
    # The server's module imports the MCP SDK (most of a second), so only when asked.
    from realms.realmtools.server import default_socket_path

    path = default_socket_path()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(CONNECT_TIMEOUT_S)
        try:
            sock.connect(str(path))
        except OSError as exc:
            return (
                f"the realmtools server does not answer on BEARPIT_HOME/run/{path.name} "
                f"({exc.strerror or exc}): pit serve and pit up start it"
            )
    return None


def tool_readiness(sandbox: Readiness) -> list[ToolReadiness]:
    """Every realmtools verb, then every grantable tool, by name."""
    problem = server_problem()
    out: list[ToolReadiness] = []
    for name in sorted(RULES):
        reason = problem
        if reason is None and name == "run_code" and not sandbox.ready:
            reason = f"the {sandbox.name} sandbox backend is not ready: {sandbox.reason}"
        out.append(ToolReadiness(name, "realmtool", reason is None, reason))
    for name in sorted(GRANTABLE_TOOLS):
        out.append(ToolReadiness(name, "granted", problem is None, problem))
    return out
