"""The batch report, from the Chronicle of each run's realm: what ended each one, k of N
reached the intended ending (with Wilson's 95 % interval), who won, how long and how
much, and what the integrity checks found. Written as JSON and Markdown under
``BEARPIT_HOME/batches/<id>/``.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from django.conf import settings

from chronicle import integrity, selectors
from realms.batch.stats import Spread, spread, wilson
from realms.models import Batch, Realm


@dataclass(frozen=True)
class RunResult:
    index: int
    realm_id: str
    parameters: dict[str, str]
    state: str
    termination: str
    intended: bool
    outcome: str
    winners: list[str]
    referees: list[str]
    duration_s: float | None
    spend_usd: float
    spend_by_agent: dict[str, float]
    findings: list[str]


def winners_of(realm_id: str, agents: list[str]) -> list[str]:
    """Who won: the agents the verdict's outcome names, else the one top scorer."""
    verdict = selectors.verdict(realm_id)
    if verdict is not None:
        outcome = str(verdict.get("outcome") or "")
        named = [a for a in agents if re.search(rf"(?<![\w-]){re.escape(a)}(?![\w-])", outcome)]
        if named:
            return named
    scores = selectors.scoreboard(realm_id)
    ranked = list(scores.items())
    if ranked and (len(ranked) == 1 or ranked[0][1] > ranked[1][1]):
        return [ranked[0][0]]
    return []


def _duration_s(realm: Realm) -> float | None:
    started = selectors.started_ms(realm.realm_id)
    if started is None or realm.concluded_at is None:
        return None
    return max(0.0, realm.concluded_at.timestamp() - started / 1000)


def run_result(run: dict[str, Any], realm: Realm, intended: list[str]) -> RunResult:
    realm_id = realm.realm_id
    ended = selectors.termination(realm_id)
    kind = ended.kind if ended is not None else str(realm.state)
    agents = list(realm.agents.values_list("agent_id", flat=True))
    spend = {a: round(t.usd, 8) for a, t in selectors.spend_by_agent(realm_id).items()}
    return RunResult(
        index=int(run["index"]),
        realm_id=realm_id,
        parameters=dict(run["parameters"]),
        state=str(realm.state),
        termination=kind,
        intended=kind in intended,
        outcome=realm.outcome or (ended.evidence if ended else ""),
        winners=winners_of(realm_id, agents),
        referees=list(realm.agents.filter(role="referee").values_list("agent_id", flat=True)),
        duration_s=_duration_s(realm),
        spend_usd=round(sum(spend.values()), 8),
        spend_by_agent=spend,
        findings=[f.code for f in integrity.findings(realm_id)],
    )


def results(batch: Batch) -> list[RunResult]:
    """The runs whose realm has ended, in run order (runs still live are left out)."""
    ids = [r["realm_id"] for r in batch.runs if r["realm_id"]]
    realms = {r.realm_id: r for r in Realm.objects.filter(realm_id__in=ids)}
    found = []
    for run in batch.runs:
        realm = realms.get(run["realm_id"] or "")
        if realm is not None and realm.is_terminal and realm.state != Realm.State.INTERRUPTED:
            found.append(run_result(run, realm, list(batch.intended)))
    return found


def _spread(values: list[float]) -> dict[str, float] | None:
    s: Spread | None = spread(values)
    return None if s is None else {k: round(v, 6) for k, v in asdict(s).items()}


def _rate(k: int, n: int) -> dict[str, Any]:
    interval = wilson(k, n)
    return {
        "k": k,
        "n": n,
        "rate": round(k / n, 6),
        "wilson95": [round(interval.low, 6), round(interval.high, 6)],
    }


def summary(batch: Batch) -> dict[str, Any]:
    """The batch report as a JSON-ready dict."""
    done = results(batch)
    n = len(done)
    k = sum(r.intended for r in done)
    agents = sorted(
        {a for r in done for a in r.spend_by_agent} | {w for r in done for w in r.winners}
    )
    cells: dict[str, list[RunResult]] = {}
    for r in done:
        cells.setdefault(json.dumps(r.parameters, sort_keys=True), []).append(r)
    findings = Counter(code for r in done for code in r.findings)
    # A referee judges; it is never a contender.
    referees = {a for r in done for a in r.referees}
    players = [a for a in agents if a not in referees]
    return {
        "batch_id": batch.batch_id,
        "package": batch.package_name,
        "state": batch.state,
        "planned": batch.count,
        "finished": n,
        "concurrency": batch.concurrency,
        "parameters": batch.parameters,
        "grid": batch.grid,
        "intended_endings": list(batch.intended),
        "intended": _rate(k, n) if n else {"k": 0, "n": 0, "rate": None, "wilson95": None},
        "by_parameters": [
            {"parameters": json.loads(key), **_rate(sum(r.intended for r in rs), len(rs))}
            for key, rs in cells.items()
        ]
        if batch.grid
        else [],
        "outcomes": dict(Counter(r.outcome for r in done).most_common()),
        "terminations": dict(Counter(r.termination for r in done).most_common()),
        "win_rates": {
            a: {
                "wins": sum(a in r.winners for r in done),
                "rate": round(sum(a in r.winners for r in done) / n, 6),
            }
            for a in players
        }
        if n
        else {},
        "duration_s": _spread([r.duration_s for r in done if r.duration_s is not None]),
        "spend_usd": _spread([r.spend_usd for r in done]),
        "spend_usd_by_agent": {
            a: _spread([r.spend_by_agent.get(a, 0.0) for r in done]) for a in agents
        },
        "integrity": {
            "findings": dict(findings.most_common()),
            "realms_with_findings": sum(bool(r.findings) for r in done),
        },
        "runs": [asdict(r) for r in done],
    }


def _fmt_spread(s: dict[str, float] | None, unit: str) -> str:
    if s is None:
        return "—"
    if unit == "$":
        return f"median ${s['median']:.4f}, p90 ${s['p90']:.4f}, max ${s['max']:.4f}"
    return f"median {s['median']:.1f}{unit}, p90 {s['p90']:.1f}{unit}, max {s['max']:.1f}{unit}"


def headline(data: dict[str, Any]) -> str:
    rate = data["intended"]
    if not rate["n"]:
        return "no run has ended yet"
    low, high = rate["wilson95"]
    return (
        f"{rate['k']} of {rate['n']} reached the intended ending "
        f"({', '.join(data['intended_endings'])}): {rate['rate']:.0%}, "
        f"95% CI {low:.0%} to {high:.0%}"
    )


def markdown(data: dict[str, Any]) -> str:
    lines = [
        f"# Batch {data['batch_id']}: {data['package']}",
        "",
        f"{data['finished']} of {data['planned']} runs ended ({data['state']}); "
        f"concurrency {data['concurrency']}.",
        "",
        f"**{headline(data)}**",
        "",
    ]
    if data["by_parameters"]:
        lines += ["## By parameters", ""]
        for cell in data["by_parameters"]:
            low, high = cell["wilson95"]
            values = ", ".join(f"{k}={v}" for k, v in cell["parameters"].items())
            lines.append(f"- {values}: {cell['k']} of {cell['n']} (95% CI {low:.0%} to {high:.0%})")
        lines.append("")
    lines += ["## Terminations", ""]
    lines += [f"- {kind}: {count}" for kind, count in data["terminations"].items()] or ["- none"]
    lines += ["", "## Outcomes", ""]
    lines += [f"- {o or '(none)'}: {count}" for o, count in data["outcomes"].items()] or ["- none"]
    lines += ["", "## Win rates", ""]
    lines += [
        f"- {agent}: {w['wins']} of {data['finished']} ({w['rate']:.0%})"
        for agent, w in data["win_rates"].items()
    ] or ["- none"]
    lines += [
        "",
        "## Duration and spend",
        "",
        f"- duration: {_fmt_spread(data['duration_s'], 's')}",
        f"- spend per realm: {_fmt_spread(data['spend_usd'], '$')}",
    ]
    lines += [
        f"- {agent}: {_fmt_spread(s, '$')}" for agent, s in data["spend_usd_by_agent"].items()
    ]
    found = data["integrity"]["findings"]
    lines += ["", "## Integrity findings", ""]
    lines += [f"- {code}: {count} realm(s)" for code, count in found.items()] or ["- none"]
    lines += [
        "",
        "## Runs",
        "",
        "| # | realm | parameters | ended by | outcome | spend |",
        "|---|---|---|---|---|---|",
    ]
    for r in data["runs"]:
        params = ", ".join(f"{k}={v}" for k, v in r["parameters"].items()) or "—"
        outcome = (r["outcome"] or "").replace("|", "\\|").replace("\n", " ")[:80]
        lines.append(
            f"| {r['index'] + 1} | {r['realm_id']} | {params} | {r['termination']} "
            f"| {outcome} | ${r['spend_usd']:.4f} |"
        )
    return "\n".join(lines) + "\n"


def batch_dir(batch_id: str) -> Path:
    return Path(settings.BEARPIT_HOME) / "batches" / batch_id


def write_report(batch: Batch) -> tuple[dict[str, Any], Path]:
    """Write ``report.json`` and ``report.md``; the data and the folder."""
    data = summary(batch)
    folder = batch_dir(batch.batch_id)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "report.json").write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    (folder / "report.md").write_text(markdown(data), encoding="utf-8")
    return data, folder
