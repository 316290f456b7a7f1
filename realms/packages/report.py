"""Plain-text summaries of a loaded package, for the command line."""

from __future__ import annotations

from realms.packages.loader import LoadResult
from realms.packages.parameters import ParameterInfo
from realms.packages.schema.project import Project, TerminationCondition


def _condition(condition: TerminationCondition) -> str:
    detail = condition.limit or condition.path or condition.pattern or condition.scope or ""
    return f"{condition.type} {detail}".strip()


def _bounds(param: ParameterInfo) -> str:
    parts: list[str] = []
    if param.choices is not None:
        parts.append("choices: " + ", ".join(param.choices))
    if param.minimum is not None:
        parts.append(f"min {param.minimum:g}")
    if param.maximum is not None:
        parts.append(f"max {param.maximum:g}")
    return "; ".join(parts)


def parameter_lines(params: list[ParameterInfo], *, detailed: bool) -> list[str]:
    """One line per parameter (required ones starred), plus detail lines when asked."""
    lines: list[str] = []
    for param in params:
        star = "*" if param.required else " "
        default = "(no default)" if param.default is None else repr(param.default)
        origin = f" [{param.origin}]" if param.origin else ""
        line = f"  {star} {param.name} ({param.type}) = {default}{origin}"
        if param.description:
            line += f" — {param.description}"
        lines.append(line)
        if detailed:
            bounds = _bounds(param)
            if bounds:
                lines.append(f"      {bounds}")
            if param.multiline:
                lines.append("      multiline")
            lines.append("      used in: " + ", ".join(param.occurrences))
    return lines


def _mechanics(project: Project) -> str:
    parts: list[str] = []
    for mechanic in project.spec.mechanics:
        if mechanic.kind == "state-machine" and mechanic.machine is not None:
            machine = mechanic.machine
            parts.append(
                f"state-machine ({len(machine.states)} states, "
                f"{len(machine.transitions)} transitions)"
            )
        else:
            parts.append(f"{mechanic.kind} ({mechanic.ruleset or 'no ruleset'})")
    return ", ".join(parts) or "none"


def summary_lines(result: LoadResult) -> list[str]:
    """What ``pit validate`` prints for a package that loaded."""
    project = result.project
    if project is None:
        return []
    lines = [f"Package: {project.metadata.name} ({result.manifest}, {project.api_version})"]
    lines.append(f"Agents ({len(project.agents)}, in roster order):")
    width = max(len(agent.id) for agent in project.agents)
    models = [
        f"model {agent.model.provider}/{agent.model.model}"
        if agent.model is not None
        else f"tier {agent.model_category}"
        for agent in project.agents
    ]
    model_width = max(len(model) for model in models)
    for agent, model in zip(project.agents, models, strict=True):
        tools = ", ".join(agent.tools) or "-"
        lines.append(
            f"  {agent.id:<{width}}  {agent.role:<11}  {model:<{model_width}}  tools: {tools}"
        )
    referee = project.referee
    lines.append(f"Referee: {referee.id if referee is not None else 'none'}")
    lines.append(f"Mechanics: {_mechanics(project)}")
    termination = ", ".join(_condition(c) for c in project.effective_termination)
    lines.append(f"Termination: {termination or 'none declared'}")
    turns = project.spec.turns
    lines.append(
        "Turns: none (always on)"
        if turns is None
        else f"Turns: {turns.policy}, referee cue {turns.referee_cue}, "
        f"silence {turns.silence_timeout_s:g}s"
    )
    lines.append(f"Realmtools: {'wired' if project.realmtools_wired else 'not wired'}")
    if result.tool_problems:
        lines.append("Tool problems:")
        lines.extend(f"  {item}" for item in result.tool_problems)
    else:
        lines.append("Tool problems: none")
    if result.parameters:
        lines.append("Parameters (* = required):")
        lines.extend(parameter_lines(result.parameters, detailed=False))
    else:
        lines.append("Parameters: none")
    if result.credentials_required:
        lines.append("Key handles needed: " + ", ".join(result.credentials_required))
    persistent = [agent.id for agent in project.agents if agent.memory == "persistent"]
    if persistent:
        lines.append(
            "Memory: persistent memory is not supported; "
            + ", ".join(persistent)
            + " start fresh like every agent"
        )
    else:
        lines.append("Memory: every agent starts fresh (ephemeral)")
    for warning in result.warnings:
        lines.append(f"warning: {warning}")
    return lines
