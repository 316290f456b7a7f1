"""Which grants of a package need the operator's explicit consent at launch.

A tool whose registry entry says ``risk: elevated`` reaches beyond the realm's own
sandboxes, and ``network_egress: open`` gives every sandbox the whole network. The HTTP
API refuses such a launch unless the body says ``allow_elevated_tools: true`` (format
§3.10); ``run_code`` is not on the list: it runs in the caller's own sandbox, which
every wired agent has.
"""

from __future__ import annotations

from realms.packages.schema.project import Project
from realms.packages.tools import GRANTABLE_TOOLS, canonical_tool_name

OPEN_EGRESS = "network_egress: open"


def elevated_grants(project: Project) -> list[str]:
    """One line per grant that needs consent: ``web_fetch (agents: a, b)``, open egress."""
    holders: dict[str, list[str]] = {}
    for agent in project.agents:
        for name in agent.tools:
            tool = GRANTABLE_TOOLS.get(canonical_tool_name(name))
            if tool is not None and tool.risk == "elevated":
                holders.setdefault(tool.name, []).append(agent.id)
    out = [f"{tool} (agents: {', '.join(sorted(ids))})" for tool, ids in sorted(holders.items())]
    if project.spec.environment.network_egress == "open":
        out.append(OPEN_EGRESS)
    return out
