"""``load_skill``: the text of an on-demand skill, read when the agent asks for it.

Skills come from the birth config and are never written: the tool only reads them, so an
agent cannot change what it or anyone else was taught.
"""

from __future__ import annotations

from runtime.birth import Skill
from runtime.tools import ToolDefinition, ToolFailure, object_schema

SOURCE = "runtime:skills"  # not a valid MCP server name, so never a server's


def load_skill_tool(skills: list[Skill]) -> ToolDefinition | None:
    """The tool serving the on-demand skills, or None when every skill is inlined."""
    by_name = {s.name: s for s in skills if s.on_demand}
    if not by_name:
        return None

    async def load(arguments: dict[str, object]) -> str:
        name = str(arguments.get("name", "")).strip()
        skill = by_name.get(name)
        if skill is None:
            known = ", ".join(sorted(by_name))
            raise ToolFailure(f"no skill named {name!r}; you can load: {known}", "unknown_skill")
        return skill.text.strip()

    return ToolDefinition(
        name="load_skill",
        description="Read one of your skills listed in the system prompt, by name.",
        parameters=object_schema(
            {"name": {"type": "string", "description": "Skill name."}}, ["name"]
        ),
        handler=load,
        source=SOURCE,
    )
