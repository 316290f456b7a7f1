"""The workspace agent's system prompt, rendered strictly from ``system.md.j2``."""

from __future__ import annotations

from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined

_ENV = Environment(
    loader=FileSystemLoader(Path(__file__).parent),
    undefined=StrictUndefined,
    autoescape=False,  # noqa: S701 - a prompt for a model, not HTML
    trim_blocks=True,
    lstrip_blocks=True,
)


def system_prompt(
    *,
    workspace: Path,
    shell_policy: str,
    git: bool,
    tool_names: list[str],
    unavailable_servers: list[str],
    notes: str,
) -> str:
    template = _ENV.get_template("system.md.j2")
    return (
        template.render(
            workspace=str(workspace),
            shell_policy=shell_policy,
            git=git,
            tool_names=tool_names,
            unavailable_servers=unavailable_servers,
            notes=notes,
        ).strip()
        + "\n"
    )
