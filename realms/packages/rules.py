"""Rules that relate fields to each other, checked after every file has its shape.

Each rule reports at the field an author has to change, in the file that holds it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from realms.packages.errors import PackageError, PackageWarning, expected, join_path, problem
from realms.packages.machine import check_machine
from realms.packages.schema.agent import BUILTIN_SKILLS, Agent, looks_like_secret
from realms.packages.schema.common import parse_duration
from realms.packages.schema.project import BUILTIN_RULESETS, Project
from realms.packages.tools import GRANTABLE_TOOLS, REALMTOOLS_VERBS, config_errors

_REQUIRED_BY_TYPE = {"duration": "limit", "stall": "limit", "file": "path", "message": "pattern"}


@dataclass(frozen=True)
class Source:
    """Where an agent was written: its file and the field prefix inside that file."""

    file: str
    prefix: str = ""

    def at(self, *parts: str | int) -> str:
        return join_path(self.prefix, *parts)


@dataclass
class Findings:
    errors: list[PackageError] = field(default_factory=list)
    warnings: list[PackageWarning] = field(default_factory=list)
    tool_problems: list[PackageError] = field(default_factory=list)


def check_project(
    project: Project,
    *,
    manifest: str,
    sources: dict[str, Source],
    roster: list[str],
    complete: bool = True,
) -> Findings:
    """Cross-field rules of a project whose files have a valid shape.

    With ``complete`` false some agents failed their own validation and are missing from
    ``project``; rules that need the whole roster (tool grants) are then left out rather than
    reported wrongly.
    """
    found = Findings()
    _spec_rules(project, manifest, roster, found)
    referees = [agent for agent in project.agents if agent.is_referee]
    for extra in referees[1:]:
        src = sources[extra.id]
        found.errors.append(
            problem(
                src.file,
                src.at("role"),
                f"a project has at most one referee ({referees[0].id} is already the referee)",
            )
        )
    for agent in project.agents:
        _agent_rules(project, agent, sources[agent.id], roster, found)
    if complete:
        _tool_rules(project, manifest, roster, found)
    return found


def _spec_rules(project: Project, manifest: str, roster: list[str], found: Findings) -> None:
    spec = project.spec
    errors = found.errors
    if spec.environment.network_egress == "allowlist":
        errors.append(
            expected(
                manifest,
                "spec.environment.network_egress",
                "one of none, model_only, open (allowlist is not implemented)",
                "allowlist",
            )
        )
    if spec.turns is not None:
        for name, supported in (
            ("advance", "one-message"),
            ("enforcement", "physics"),
            ("order", "roster"),
        ):
            value = getattr(spec.turns, name)
            if value != supported:
                errors.append(
                    expected(
                        manifest,
                        f"spec.turns.{name}",
                        f"{supported} ({value} is not implemented)",
                        value,
                    )
                )
    machines = [m for m in spec.mechanics if m.kind == "state-machine"]
    for index, condition in enumerate(spec.termination):
        base = f"spec.termination[{index}]"
        needed = _REQUIRED_BY_TYPE.get(condition.type)
        if needed is not None and not getattr(condition, needed):
            errors.append(
                problem(
                    manifest,
                    f"{base}.{needed}",
                    f"required field missing (a {condition.type} condition needs it)",
                )
            )
        if condition.type == "machine_terminal" and not machines:
            errors.append(
                problem(
                    manifest,
                    f"{base}.type",
                    "machine_terminal needs a state-machine mechanic in spec.mechanics",
                )
            )
        if condition.type == "tasks_complete" and not any(
            m.kind == "task-board" for m in spec.mechanics
        ):
            errors.append(
                problem(
                    manifest,
                    f"{base}.type",
                    "tasks_complete needs a task-board mechanic in spec.mechanics",
                )
            )
        if condition.match_mode == "regex":
            for name in ("pattern", "content_match"):
                needle = getattr(condition, name)
                if needle is None:
                    continue
                try:
                    re.compile(needle)
                except re.error as exc:
                    errors.append(
                        expected(
                            manifest,
                            f"{base}.{name}",
                            f"a valid regular expression ({exc})",
                            needle,
                        )
                    )
    for index, mechanic in enumerate(spec.mechanics):
        base = f"spec.mechanics[{index}]"
        if mechanic.kind == "sealed-submit":
            ruleset = mechanic.ruleset
            if ruleset is not None and not (
                ruleset in BUILTIN_RULESETS
                or (ruleset.startswith("custom:") and len(ruleset) > len("custom:"))
            ):
                errors.append(
                    expected(
                        manifest,
                        f"{base}.ruleset",
                        "one of " + ", ".join(BUILTIN_RULESETS) + " or custom:<name>",
                        ruleset,
                    )
                )
            if mechanic.machine is not None:
                errors.append(
                    problem(
                        manifest, f"{base}.machine", "only a state-machine mechanic takes a machine"
                    )
                )
        elif mechanic.kind == "task-board":
            errors.extend(_task_board_rules(project, manifest, base, index))
        elif mechanic.kind in WAKE_MECHANICS:
            errors.extend(_wake_mechanic_rules(project, manifest, base, index))
        else:
            if mechanic.ruleset is not None:
                errors.append(
                    problem(
                        manifest, f"{base}.ruleset", "only a sealed-submit mechanic takes a ruleset"
                    )
                )
            if mechanic.machine is None:
                errors.append(
                    problem(
                        manifest,
                        f"{base}.machine",
                        "required field missing (a state-machine needs it)",
                    )
                )
    for index, mechanic in enumerate(spec.mechanics):
        if mechanic.kind != "task-board":
            for name in ("lease", "leads", "worktrees"):
                if getattr(mechanic, name) is not None:
                    errors.append(
                        problem(
                            manifest,
                            f"spec.mechanics[{index}].{name}",
                            "only a task-board mechanic takes " + name,
                        )
                    )
    for index, mechanic in enumerate(spec.mechanics):
        takes = WAKE_MECHANICS.get(mechanic.kind, ())
        for name in ("max_per_agent", "min_every"):
            if name not in takes and getattr(mechanic, name) is not None:
                errors.append(
                    problem(
                        manifest,
                        f"spec.mechanics[{index}].{name}",
                        f"only a {WAKE_TAKERS[name]} mechanic takes {name}",
                    )
                )
    machine_indexes = [i for i, m in enumerate(spec.mechanics) if m.kind == "state-machine"]
    for index in machine_indexes[1:]:
        errors.append(
            problem(
                manifest,
                f"spec.mechanics[{index}].kind",
                "a project declares at most one state-machine",
            )
        )
    for index, mechanic in enumerate(spec.mechanics):
        if mechanic.kind == "state-machine" and mechanic.machine is not None:
            referee = project.referee
            errors.extend(
                check_machine(
                    mechanic.machine,
                    file=manifest,
                    prefix=f"spec.mechanics[{index}].machine",
                    roster=roster,
                    referee=referee.id if referee is not None else None,
                    turns=spec.turns is not None,
                )
            )
            break
    for index, pattern in enumerate(spec.outputs):
        pure = PurePosixPath(pattern)
        if pure.is_absolute() or ".." in pure.parts or "\\" in pattern:
            errors.append(
                expected(
                    manifest,
                    f"spec.outputs[{index}]",
                    "a path relative to the shared folder",
                    pattern,
                )
            )
    if spec.referee_opens and project.referee is None:
        found.warnings.append(
            PackageWarning(
                manifest, "spec.referee_opens", "has no effect: the roster has no referee"
            )
        )


def _agent_rules(
    project: Project, agent: Agent, src: Source, roster: list[str], found: Findings
) -> None:
    errors = found.errors
    file = src.file
    if not agent.is_referee:
        for name in ("rubric", "powers"):
            if getattr(agent, name) is not None:
                errors.append(
                    problem(
                        file, src.at(name), f"{name} is for the referee only (role is participant)"
                    )
                )
    if agent.memory == "persistent":
        found.warnings.append(
            PackageWarning(
                file, src.at("memory"), "persistent memory is not supported; the agent starts fresh"
            )
        )
    for index, skill in enumerate(agent.skills):
        if skill.source == "gh":
            errors.append(
                expected(
                    file,
                    src.at("skills", index, "source"),
                    "builtin, local or user (gh is not implemented)",
                    "gh",
                )
            )
        elif skill.source == "builtin" and skill.ref not in BUILTIN_SKILLS:
            errors.append(
                expected(
                    file,
                    src.at("skills", index, "ref"),
                    "a built-in skill (" + ", ".join(BUILTIN_SKILLS) + ")",
                    skill.ref,
                )
            )
    model = agent.model
    if model is not None:
        if looks_like_secret(model.api_key_ref):
            # Never echo the value: it may be a live key.
            errors.append(
                problem(
                    file,
                    src.at("model", "api_key_ref"),
                    "looks like a real key; give a key-store handle such as "
                    "'anthropic-main' (secrets never live in a package)",
                )
            )
        if agent.budget.capped:
            for name in ("input_cost_per_token", "output_cost_per_token"):
                if getattr(model, name) is None:
                    errors.append(
                        problem(
                            file,
                            src.at("model", name),
                            "required field missing (the budget cap needs per-token "
                            "costs when an explicit model is set)",
                        )
                    )
    messaging = agent.private_messaging
    if not messaging.enabled:
        for name, is_set in (
            ("include_referee", messaging.include_referee),
            ("peers", bool(messaging.peers)),
            ("max_per_round", bool(messaging.max_per_round)),
        ):
            if is_set:
                errors.append(
                    problem(
                        file,
                        src.at("private_messaging", name),
                        "needs private_messaging.enabled: true",
                    )
                )
    if messaging.max_per_round and project.spec.turns is None:
        errors.append(
            problem(
                file,
                src.at("private_messaging", "max_per_round"),
                "is per round and needs a turns block in project.json",
            )
        )
    for index, peer in enumerate(messaging.peers):
        if peer == agent.id:
            errors.append(
                expected(
                    file, src.at("private_messaging", "peers", index), "another agent's id", peer
                )
            )
        elif peer not in roster:
            errors.append(
                expected(
                    file,
                    src.at("private_messaging", "peers", index),
                    "an agent id of the roster (" + ", ".join(roster) + ")",
                    peer,
                )
            )
    seen: set[str] = set()
    for index, name in enumerate(agent.tools):
        path = src.at("tools", index)
        if name in REALMTOOLS_VERBS:
            errors.append(
                problem(
                    file,
                    path,
                    f"{name} is a realmtools verb every agent already "
                    "has; only registry tools are granted",
                )
            )
        elif name in seen:
            errors.append(problem(file, path, f"{name} is granted twice"))
        elif name not in GRANTABLE_TOOLS:
            found.tool_problems.append(
                problem(
                    file,
                    path,
                    f"{name} is not provided by this installation "
                    f"(available: {', '.join(GRANTABLE_TOOLS)})",
                )
            )
        seen.add(name)


def _tool_rules(project: Project, manifest: str, roster: list[str], found: Findings) -> None:
    granted = set(project.granted_tools)
    for name, config in project.spec.tools.items():
        base = f"spec.tools.{name}"
        if name not in granted:
            # The reference format loads such a package: the configuration is inert, so it
            # is worth a word to the author but no reason to refuse the package.
            found.warnings.append(
                PackageWarning(
                    manifest,
                    base,
                    f"configures {name}, but no agent is granted it; the configuration is unused",
                )
            )
        tool = GRANTABLE_TOOLS.get(name)
        if tool is None:
            continue
        found.errors.extend(config_errors(tool, config, manifest, base))
        by_agent = config.get("max_calls_by_agent")
        if isinstance(by_agent, dict):
            for agent_id in by_agent:
                if agent_id not in roster:
                    found.errors.append(
                        expected(
                            manifest,
                            f"{base}.max_calls_by_agent.{agent_id}",
                            "an agent id of the roster (" + ", ".join(roster) + ")",
                            agent_id,
                        )
                    )
    if granted and not project.spec.provide_tools:
        found.warnings.append(
            PackageWarning(
                manifest,
                "spec.provide_tools",
                "is false, so granted tools (" + ", ".join(sorted(granted)) + ") are not served",
            )
        )


# A lease shorter than a model call would expire under an agent that is working.
MIN_LEASE_S = 30.0
MAX_LEASE_S = 86_400.0


def _task_board_rules(project: Project, manifest: str, base: str, index: int) -> list[PackageError]:
    """A task board: at most one, a lease in bounds, leads who are participants."""
    errors: list[PackageError] = []
    mechanic = project.spec.mechanics[index]
    earlier = [m for m in project.spec.mechanics[:index] if m.kind == "task-board"]
    if earlier:
        errors.append(
            problem(manifest, f"{base}.kind", "a project declares at most one task-board")
        )
    for name in ("ruleset", "machine"):
        if getattr(mechanic, name) is not None:
            errors.append(problem(manifest, f"{base}.{name}", "a task-board takes no " + name))
    if mechanic.lease is not None:
        seconds = parse_duration(mechanic.lease)
        if not MIN_LEASE_S <= seconds <= MAX_LEASE_S:
            errors.append(
                expected(manifest, f"{base}.lease", "a duration from 30s to 1d", mechanic.lease)
            )
    if mechanic.worktrees and not project.spec.environment.shared_folder.enabled:
        errors.append(
            problem(
                manifest,
                f"{base}.worktrees",
                "worktrees live in the shared folder: enable spec.environment.shared_folder",
            )
        )
    participants = [a.id for a in project.participants]
    for i, lead in enumerate(mechanic.leads or []):
        if lead not in participants:
            errors.append(
                expected(
                    manifest,
                    f"{base}.leads[{i}]",
                    "a participant of the roster (" + ", ".join(participants) + ")",
                    lead,
                )
            )
    return errors


# Schedules and background jobs: which fields each takes, and their bounds.
WAKE_MECHANICS: dict[str, tuple[str, ...]] = {
    "schedules": ("max_per_agent", "min_every"),
    "background-jobs": ("max_per_agent",),
}
WAKE_TAKERS = {"max_per_agent": "schedules or background-jobs", "min_every": "schedules"}
MAX_JOBS_PER_AGENT = 8
MIN_EVERY_RANGE_S = (30.0, 86_400.0)


def _wake_mechanic_rules(
    project: Project, manifest: str, base: str, index: int
) -> list[PackageError]:
    """Schedules and background jobs: at most one of each, their bounds in range."""
    errors: list[PackageError] = []
    mechanic = project.spec.mechanics[index]
    if any(m.kind == mechanic.kind for m in project.spec.mechanics[:index]):
        errors.append(
            problem(manifest, f"{base}.kind", f"a project declares at most one {mechanic.kind}")
        )
    for name in ("ruleset", "machine"):
        if getattr(mechanic, name) is not None:
            errors.append(
                problem(manifest, f"{base}.{name}", f"a {mechanic.kind} mechanic takes no {name}")
            )
    count = mechanic.max_per_agent
    if mechanic.kind == "background-jobs" and count is not None and count > MAX_JOBS_PER_AGENT:
        errors.append(
            expected(manifest, f"{base}.max_per_agent", f"1 to {MAX_JOBS_PER_AGENT}", count)
        )
    if mechanic.kind == "schedules" and mechanic.min_every is not None:
        low, high = MIN_EVERY_RANGE_S
        if not low <= parse_duration(mechanic.min_every) <= high:
            errors.append(
                expected(
                    manifest, f"{base}.min_every", "a duration from 30s to 1d", mechanic.min_every
                )
            )
    return errors
