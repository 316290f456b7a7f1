"""The final report: a Markdown summary of a realm, built only from its Chronicle.

The report quotes text the referee wrote (verdict outcome, violation reasons), which is
untrusted; it is served as ``text/markdown`` and never rendered as HTML by us.
"""

from __future__ import annotations

from typing import Any

from chronicle import selectors
from realms.models import Realm


def realm_title(realm_id: str) -> str:
    """The scenario's display name from the project snapshot, else ``Realm <id>``."""
    for project in _project_snapshots(realm_id):
        metadata = project.get("metadata")
        if isinstance(metadata, dict):
            name = metadata.get("name")
            if isinstance(name, str) and name.strip():
                return name.strip()
    return f"Realm {realm_id}"


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


def _project_snapshots(realm_id: str) -> list[dict[str, Any]]:
    """Project snapshots that may name the realm: the running event's, then the Realm row's."""
    found: list[dict[str, Any]] = []
    running = selectors.running_payload(realm_id) or {}
    if isinstance(running.get("project"), dict):
        found.append(running["project"])
    row = Realm.objects.filter(realm_id=realm_id).values_list("project", flat=True).first()
    if isinstance(row, dict):
        found.append(row)
    return found
