"""The final report: a Markdown summary of a realm, built only from its Chronicle.

The report quotes text the referee wrote (verdict outcome, violation reasons), which is
untrusted; it is served as ``text/markdown`` and never rendered as HTML by us.
"""

from __future__ import annotations

from chronicle import selectors, tasks, wakes
from chronicle.integrity import findings
from realms.models import Realm
from realms.plan import plan_of


def realm_title(realm_id: str) -> str:
    """The scenario's declared name (as chronicled, else from the Realm row), else
    ``Realm <id>``."""
    title = selectors.realm_plan(realm_id).title
    if title is None:
        row = Realm.objects.filter(realm_id=realm_id).first()
        title = plan_of(row).title if row is not None else None
    return title or f"Realm {realm_id}"


def headline(realm_id: str) -> str:
    """``**Outcome:**`` of the verdict, else ``**Concluded:**`` reason and detail."""
    verdict = selectors.verdict(realm_id)
    if verdict is not None and verdict.get("outcome") is not None:
        return f"**Outcome:** {verdict['outcome']}"
    concluded = selectors.conclusion(realm_id)
    if concluded is not None:
        reason = str(concluded.get("reason") or "")
        detail = str(concluded.get("detail") or "")
        return f"**Concluded:** {reason}" + (f" — {detail}" if detail else "")
    return "**Outcome:** —"


def render_report(realm_id: str, *, title: str | None = None) -> str:
    """The realm's final report as Markdown."""
    lines = [f"# {title or realm_title(realm_id)} — final report", "", headline(realm_id), ""]
    lines += ruling_section(realm_id)
    lines += termination_section(realm_id)
    lines += eliminations_section(realm_id)
    lines += integrity_section(realm_id)
    lines += task_board_section(realm_id)
    lines += wakes_section(realm_id)

    scores = selectors.scoreboard(realm_id)
    if scores:
        lines.append("## Scores")
        lines += [f"- {agent}: {value:g}" for agent, value in scores.items()]
        lines.append("")

    violations = selectors.violations(realm_id)
    if violations:
        lines.append("## Violations")
        lines += [f"- {v['agent']}: {v.get('reason', '')}" for v in violations]
        lines.append("")

    lines.append("## Spend")
    spend = selectors.spend_by_agent(realm_id)
    lines += nominal_note(realm_id, spend)
    if spend:
        lines += [f"- {agent}: ${total.usd:.4f}" for agent, total in spend.items()]
        lines.append(f"- **total: ${sum(t.usd for t in spend.values()):.4f}**")
    else:
        lines.append("- (no spend recorded)")

    # Tool spend stays apart from model spend: the agent's cap meters models only, so a
    # combined figure would suggest an enforcement that does not exist.
    tools = selectors.tool_use(realm_id)
    if tools:
        lines += ["", "## Tool use"]
        for agent, use in tools.items():
            plural = "" if use.calls == 1 else "s"
            cost = f", ${use.usd:.4f}" if use.usd else ""
            lines.append(f"- {agent}: {use.calls} call{plural}{cost}")
        tool_total = sum(use.usd for use in tools.values())
        if tool_total:
            lines.append(f"- **total: ${tool_total:.4f}**")

    n_messages = selectors.message_count(realm_id)
    n_events = selectors.event_count(realm_id)
    lines += ["", f"_{n_messages} messages, {n_events} events chronicled._"]
    return "\n".join(lines) + "\n"


def ruling_section(realm_id: str) -> list[str]:
    """The verdict's outcome, who ruled, and the reasons the referee gave."""
    verdict = selectors.verdict(realm_id)
    if verdict is None or verdict.get("outcome") is None:
        return []
    by = verdict.get("issued_by")
    lines = ["## Ruling", f"{verdict['outcome']}" + (f" — ruled by {by}" if by else "")]
    reasons = verdict.get("reasons")
    items = reasons if isinstance(reasons, list) else [reasons]
    lines += [_bullet(str(item)) for item in items if item is not None and str(item).strip()]
    return [*lines, ""]


def task_board_section(realm_id: str) -> list[str]:
    """Each task's end state, who delivered it and how; no section without a board."""
    board = tasks.board(realm_id)
    if not board:
        return []
    done = sum(t.state == "done" for t in board)
    lines = ["## Task board", f"{done} of {len(board)} tasks done."]
    for t in board:
        text = f"{t.number}. {t.title} — {t.state}"
        if t.state == "done":
            text += f" by {t.holder}: {t.summary}" if t.summary else f" by {t.holder}"
        elif t.state == "claimed":
            text += f" by {t.holder}"
        elif t.state == "blocked" and t.reason:
            text += f": {t.reason}"
        if t.merged:
            text += f" (merged from {t.merged})"
        elif t.conflicts:
            text += f" (merge conflict in {', '.join(t.conflicts)})"
        if t.expiries:
            text += f" ({t.expiries} lease{'' if t.expiries == 1 else 's'} expired)"
        lines.append(_bullet(text))
    return [*lines, ""]


def wakes_section(realm_id: str) -> list[str]:
    """Schedules and background jobs: each with its agent and how it went; no section
    when the realm had neither."""
    schedules, jobs = wakes.replay(realm_id)
    lines: list[str] = []
    if schedules:
        lines.append("## Schedules")
        for s in schedules:
            note = s.note if len(s.note) <= 120 else s.note[:119] + "…"
            text = f"{s.number}. {s.agent}, {s.when}: {note} — due {s.due}, read {s.acked}"
            if s.given_up:
                text += f", {s.given_up} never read"
            if s.cancelled:
                text += ", cancelled"
            lines.append(_bullet(text))
        lines.append("")
    if jobs:
        lines.append("## Background jobs")
        for j in jobs:
            how = f"exit code {j.exit_code}" if j.state == "done" else j.state
            if j.killed_by_agent and j.state == "killed":
                how = "killed by its agent"
            lines.append(_bullet(f"{j.number}. {j.agent}: {how}"))
        lines.append("")
    return lines


def integrity_section(realm_id: str) -> list[str]:
    """Signs the result may not mean what it says; no section when there are none."""
    found = findings(realm_id)
    if not found:
        return []
    return ["## Integrity", *(f"- {finding.line()}" for finding in found), ""]


def termination_section(realm_id: str) -> list[str]:
    """Which condition ended the realm and what it saw."""
    ended = selectors.termination(realm_id)
    if ended is None:
        return []
    lines = ["## Termination", f"- kind: `{ended.kind}`"]
    if ended.evidence:
        lines.append(_bullet(f"evidence: {ended.evidence}"))
    return [*lines, ""]


def eliminations_section(realm_id: str) -> list[str]:
    """Who the referee removed, in which round and how long after the start, and why."""
    found = selectors.eliminations(realm_id)
    if not found:
        return []
    start = selectors.started_ms(realm_id)
    lines = ["## Eliminations"]
    for e in found:
        when = [] if e.round is None else [f"round {e.round}"]
        if start is not None:
            when.append(f"+{_elapsed(e.ts_ms - start)}")
        who = e.agent or "nobody"
        text = f"{who} ({', '.join(when)})" if when else who
        text += f": {e.reason}" if e.reason else ""
        text += f" — by {e.issued_by}" if e.issued_by else ""
        lines.append(_bullet(text))
    return [*lines, ""]


def nominal_note(realm_id: str, spend: dict[str, selectors.AgentSpendTotal]) -> list[str]:
    """Say so when the figures are the scripted provider's made-up prices, not money."""
    nominal = selectors.nominal_agents(realm_id)
    if not nominal:
        return []
    providers = ", ".join(sorted(set(nominal.values())))
    if set(spend) <= set(nominal):
        return [
            f"_Prices are nominal: every agent ran on the scripted provider ({providers}); "
            "no real money was spent._"
        ]
    names = ", ".join(sorted(nominal))
    subject = "it" if len(nominal) == 1 else "they"
    return [
        f"_Prices are nominal for {names}: {subject} ran on the scripted provider "
        f"({providers}); the rest is real spend._"
    ]


def _bullet(text: str) -> str:
    """A list item; the referee's multi-line text stays inside the item."""
    return "- " + "\n  ".join(line.rstrip() for line in text.strip().splitlines())


def _elapsed(ms: int) -> str:
    seconds = max(ms, 0) // 1000
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"
