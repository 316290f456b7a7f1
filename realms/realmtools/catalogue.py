"""Who may see and call which realmtools verb.

The same rules decide the tool list an agent is shown and whether a call is
allowed, so a hidden tool can never be called by guessing its name. Roles and
grants are re-read from the realm on every call.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from chronicle.selectors import agents_out
from realms.packages.tools import canonical_tool_name
from realms.realmtools import granted
from realms.realmtools.context import Caller
from realms.realmtools.errors import Refusal


class Who(StrEnum):
    ANYONE = "anyone"
    PARTICIPANT = "participant"
    REFEREE = "referee"
    DM = "dm"
    GRANTED = "granted"
    LEAD = "lead"  # the referee and the task board's leads


@dataclass(frozen=True)
class Rule:
    who: Who
    acts: bool  # changes the realm: refused to eliminated agents and outside a live realm
    machine: bool = False
    table: bool = False
    text: bool = False  # answers in text; refusals read "error: …"
    board: bool = False  # only in realms with a task board
    worktrees: bool = False  # only when that board gives claims git worktrees
    needs: str | None = None  # "schedules" or "jobs": only in realms with that mechanic


RULES: dict[str, Rule] = {
    "submit_sealed": Rule(Who.PARTICIPANT, acts=True, text=True),
    "reveal_status": Rule(Who.ANYONE, acts=False),
    "reveal": Rule(Who.REFEREE, acts=True),
    "tally": Rule(Who.REFEREE, acts=True),
    "turn_status": Rule(Who.ANYONE, acts=False),
    "send_private": Rule(Who.DM, acts=True, text=True),
    "run_code": Rule(Who.ANYONE, acts=True),
    "remember": Rule(Who.ANYONE, acts=True, text=True),
    "recall": Rule(Who.ANYONE, acts=False),
    "score": Rule(Who.REFEREE, acts=True),
    "penalize": Rule(Who.REFEREE, acts=True),
    "flag": Rule(Who.REFEREE, acts=True),
    "scoreboard": Rule(Who.ANYONE, acts=False),
    "eliminate": Rule(Who.REFEREE, acts=True),
    "rule": Rule(Who.REFEREE, acts=True),
    "game_state": Rule(Who.ANYONE, acts=False, machine=True),
    "game_act": Rule(Who.ANYONE, acts=True, machine=True),
    "game_set": Rule(Who.REFEREE, acts=True, machine=True),
    "game_declaration": Rule(Who.ANYONE, acts=False, machine=True),
    "table_talk": Rule(Who.REFEREE, acts=False, machine=True, table=True),
    "budget_status": Rule(Who.ANYONE, acts=False),
    "task_add": Rule(Who.ANYONE, acts=True, board=True),
    "task_list": Rule(Who.ANYONE, acts=False, board=True),
    "task_claim": Rule(Who.PARTICIPANT, acts=True, board=True),
    "task_release": Rule(Who.ANYONE, acts=True, board=True),
    "task_complete": Rule(Who.PARTICIPANT, acts=True, board=True),
    "task_block": Rule(Who.ANYONE, acts=True, board=True),
    "task_assign": Rule(Who.LEAD, acts=True, board=True),
    # Task worktrees (realms.realmtools.worktrees).
    "task_merge": Rule(Who.LEAD, acts=True, board=True, worktrees=True),
    # schedules and background jobs
    "schedule": Rule(Who.ANYONE, acts=True, needs="schedules"),
    "schedule_cancel": Rule(Who.ANYONE, acts=True, needs="schedules"),
    "schedule_list": Rule(Who.ANYONE, acts=False, needs="schedules"),
    "job_status": Rule(Who.ANYONE, acts=False, needs="jobs"),
    "job_output": Rule(Who.ANYONE, acts=False, needs="jobs"),
    "job_kill": Rule(Who.ANYONE, acts=True, needs="jobs"),
}

NEEDS = {"schedules": "this realm has no schedules", "jobs": "this realm has no background jobs"}


def rule_for(name: str) -> Rule:
    if name in RULES:
        return RULES[name]
    if granted.get(name) is not None:
        return Rule(Who.GRANTED, acts=True)
    raise Refusal(f"no tool named {name!r}")


def belongs(caller: Caller) -> None:
    """The token's agent must be in the realm, in the role the token claims."""
    agent = caller.facts.agent(caller.agent_id)
    if agent is None:
        raise Refusal(f"{caller.agent_id} is not an agent of realm {caller.realm_id}")
    if agent.is_referee != caller.is_referee:
        raise Refusal(f"the token's role does not match {caller.agent_id}'s role in this realm")


def holds_grant(caller: Caller, name: str) -> bool:
    agent = caller.facts.agent(caller.agent_id)
    grants = {canonical_tool_name(g) for g in caller.identity.grants}
    return agent is not None and name in grants and name in agent.granted


def _reason_hidden(name: str, rule: Rule, caller: Caller) -> str | None:
    facts = caller.facts
    board = facts.plan.task_board
    if rule.board and board is None:
        return "this realm has no task board"
    if rule.worktrees and (board is None or not board.worktrees):
        return "this realm's task board has no worktrees"
    if rule.needs is not None and getattr(facts.plan, rule.needs) is None:
        return NEEDS[rule.needs]
    if rule.who is Who.LEAD and not (
        caller.is_referee or (board is not None and caller.agent_id in board.leads)
    ):
        return f"only the referee or a lead may call {name}"
    if rule.who is Who.REFEREE and not caller.is_referee:
        return f"only the referee may call {name}"
    if rule.who is Who.PARTICIPANT and caller.is_referee:
        return f"{name} is for participants; the referee does not play"
    if rule.who is Who.DM and not facts.dm_partners(caller.agent_id):
        return "you have no private-message rooms in this realm"
    if rule.who is Who.GRANTED and not holds_grant(caller, name):
        return f"{name} is not granted to you"
    if rule.machine and facts.machine is None:
        return "no machine declared"
    if rule.table and not facts.plan.referee_reads_commons:
        return "this machine does not let the referee read the Commons"
    return None


def visible(name: str, caller: Caller) -> bool:
    try:
        return _reason_hidden(name, rule_for(name), caller) is None
    except Refusal:
        return False


def check(name: str, caller: Caller) -> Rule:
    """Raise Refusal unless the caller may make this call now."""
    belongs(caller)
    rule = rule_for(name)
    reason = _reason_hidden(name, rule, caller)
    if reason is not None:
        raise Refusal(reason)
    if rule.acts:
        if caller.agent_id in agents_out(caller.realm_id):
            raise Refusal("you have been eliminated; you can no longer act in this realm")
        if not caller.facts.live:
            raise Refusal(f"the realm is not running (it is {caller.facts.state})")
    return rule


def visible_names(caller: Caller) -> list[str]:
    try:
        belongs(caller)
    except Refusal:
        return []
    return [n for n in [*RULES, *granted.names()] if visible(n, caller)]
