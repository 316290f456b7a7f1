"""A cost and duration forecast of a package, before it is launched.

The package is launched inside a transaction that is rolled back, so the forecast sees
exactly what a launch would resolve (parameters bound, each agent's tier, model, price
and cap from the provider profile) and nothing of it remains. From that:

- each agent's first request is built and counted (:mod:`realms.forecast.first_request`);
- the package alone gives a range: at least that first call, at most the calls the
  realm's time limit leaves room for, each prompt larger than the last by what a turn
  adds; the cap, when there is one, is the ceiling of what can be spent;
- earlier realms of the same package, if there are any, give the range they actually
  spent and lasted (Chronicle spend).

Caps are shown beside the range, and the one that binds first is named: the budget cap
reached in the fewest seconds, or the time limit when no cap is reached before it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from django.db import transaction

from chronicle import selectors
from ledger.services.profiles import get_profile, resolve_agent_model
from realms.batch.stats import Spread, spread
from realms.forecast.first_request import first_request
from realms.models import Realm
from realms.packages.schema.common import parse_duration
from realms.plan import plan_of
from realms.services.launch import (
    LaunchError,
    LaunchOptions,
    launch_realm,
    load_project,
    realm_slug,
)

# What the package-only estimate assumes of a model call it cannot see: how many tokens
# a call writes, how much each call adds to the next prompt (its reply, the messages
# that woke it), and how long a call and the turn around it take.
OUTPUT_TOKENS_PER_CALL = 300
PROMPT_GROWTH_PER_CALL = 600
SECONDS_PER_CALL = 10.0
# A realm without a time limit is estimated over this long (and the forecast says so).
OPEN_ENDED_S = 3600.0
PAST_RUNS = 50


@dataclass(frozen=True)
class AgentForecast:
    agent_id: str
    role: str
    model: str
    provider: str
    nominal: bool
    input_price: float
    output_price: float
    first_request_tokens: int
    tools: list[str]
    calls_high: int
    cost_low: float
    cost_high: float
    cap_usd: float | None
    seconds_to_cap: float | None
    past_spend: Spread | None = None


@dataclass(frozen=True)
class Forecast:
    package: str
    provider: str
    agents: list[AgentForecast]
    cost_low: float
    cost_high: float
    duration_limit_s: float | None
    stall_limit_s: float | None
    duration_high_s: float
    binds_first: str
    past_runs: int = 0
    past_total: Spread | None = None
    past_duration_s: Spread | None = None
    notes: list[str] = field(default_factory=list)


class _RolledBack(Exception):
    def __init__(self, forecast: Forecast) -> None:
        super().__init__("forecast done")
        self.forecast = forecast


def _limit(termination: list[dict[str, Any]], kind: str) -> float | None:
    limits = [parse_duration(str(t["limit"])) for t in termination if t.get("type") == kind]
    return min(limits) if limits else None


def _cost(tokens_in: int, tokens_out: int, agent: AgentForecast | dict[str, float]) -> float:
    if isinstance(agent, AgentForecast):
        return tokens_in * agent.input_price + tokens_out * agent.output_price
    return tokens_in * agent["in"] + tokens_out * agent["out"]


def _high(first: int, calls: int, prices: dict[str, float]) -> float:
    # Call i sees the first prompt plus i calls' growth.
    tokens_in = calls * first + PROMPT_GROWTH_PER_CALL * calls * (calls - 1) // 2
    return _cost(tokens_in, calls * OUTPUT_TOKENS_PER_CALL, prices)


def _seconds_to_cap(first: int, cap: float | None, prices: dict[str, float]) -> float | None:
    """How long, at the estimate's pace, until the agent's spend reaches its cap."""
    if cap is None or (prices["in"] == 0 and prices["out"] == 0):
        return None
    calls = 0
    while _high(first, calls + 1, prices) < cap:
        calls += 1
        if calls > 100_000:
            return None
    return (calls + 1) * SECONDS_PER_CALL


def _past(package: str) -> tuple[int, dict[str, Spread | None], Spread | None, Spread | None]:
    realms = list(
        Realm.objects.filter(package_name=package, state=Realm.State.ARCHIVED)
        .exclude(started_at=None)
        .order_by("-created_at")[:PAST_RUNS]
    )
    by_agent: dict[str, list[float]] = {}
    totals, durations = [], []
    for realm in realms:
        spent = selectors.spend_by_agent(realm.realm_id)
        for agent, total in spent.items():
            by_agent.setdefault(agent, []).append(total.usd)
        totals.append(sum(t.usd for t in spent.values()))
        if realm.concluded_at and realm.started_at:
            durations.append((realm.concluded_at - realm.started_at).total_seconds())
    return (
        len(realms),
        {a: spread(v) for a, v in by_agent.items()},
        spread(totals),
        spread(durations),
    )


def _binds_first(agents: list[AgentForecast], duration: float | None, stall: float | None) -> str:
    capped = [a for a in agents if a.seconds_to_cap is not None]
    first = min(capped, key=lambda a: a.seconds_to_cap or 0.0) if capped else None
    horizon = duration if duration is not None else OPEN_ENDED_S
    if first is not None and (first.seconds_to_cap or 0.0) < horizon:
        return (
            f"{first.agent_id}'s budget cap (${first.cap_usd:.2f}) — reached after about "
            f"{first.seconds_to_cap:.0f}s at the estimate's pace"
            + (f", before the {duration:.0f}s time limit" if duration is not None else "")
        )
    if duration is not None:
        return f"the time limit ({duration:.0f}s): no budget cap is reached before it"
    if stall is not None:
        return f"no time limit; only the stall limit ({stall:.0f}s) or the scenario ends it"
    return "nothing: no time limit and no budget cap is reached in the estimate's hour"


def _forecast(realm: Realm) -> Forecast:
    plan = plan_of(realm)
    config = dict(realm.run_config)
    termination = list(config.get("termination") or [])
    duration = _limit(termination, "duration")
    stall = _limit(termination, "stall")
    horizon = duration if duration is not None else OPEN_ENDED_S
    calls_high = max(1, int(horizon // SECONDS_PER_CALL))
    profile = get_profile(realm.provider or config.get("provider") or "")
    count, past_by_agent, past_total, past_duration = _past(realm.package_name)
    agents = []
    snapshot_agents = {a["id"]: a for a in realm.project.get("agents") or []}
    for row in config.get("agents") or []:
        resolved = resolve_agent_model(snapshot_agents[row["id"]], profile)
        prices = {
            "in": float(resolved.input_cost_per_token or 0),
            "out": float(resolved.output_cost_per_token or 0),
        }
        first = first_request(realm.realm_id, plan, row["id"], resolved.model)
        cap = float(resolved.cap_usd) if resolved.cap_usd is not None else None
        high = _high(first.tokens, calls_high, prices)
        agents.append(
            AgentForecast(
                agent_id=row["id"],
                role=row.get("role", "participant"),
                model=resolved.model,
                provider=resolved.provider,
                nominal=resolved.transport == "scripted",
                input_price=prices["in"],
                output_price=prices["out"],
                first_request_tokens=first.tokens,
                tools=first.tools,
                calls_high=calls_high,
                cost_low=_cost(first.tokens, 0, prices),
                cost_high=min(high, cap) if cap is not None else high,
                cap_usd=cap,
                seconds_to_cap=_seconds_to_cap(first.tokens, cap, prices),
                past_spend=past_by_agent.get(row["id"]),
            )
        )
    notes = []
    if duration is None:
        notes.append(f"no time limit: the high end assumes {OPEN_ENDED_S:.0f}s")
    if any(a.nominal for a in agents):
        notes.append("prices are nominal (the scripted provider): not money")
    return Forecast(
        package=realm.package_name,
        provider=profile.name,
        agents=agents,
        cost_low=sum(a.cost_low for a in agents),
        cost_high=sum(a.cost_high for a in agents),
        duration_limit_s=duration,
        stall_limit_s=stall,
        duration_high_s=horizon,
        binds_first=_binds_first(agents, duration, stall),
        past_runs=count,
        past_total=past_total,
        past_duration_s=past_duration,
        notes=notes,
    )


def forecast(path: Path, options: LaunchOptions | None = None) -> Forecast:
    """Forecast the package at ``path``; raises ``LaunchError`` as a launch would."""
    options = options or LaunchOptions()
    if options.realm_id is None:
        # The realm id is in every agent's prompt: a fixed one, as long as a launch's,
        # counts the same tokens each time the same package is forecast.
        try:
            project, _ = load_project(path)
        except LaunchError:
            pass  # the launch below says why
        else:
            steady = f"{realm_slug(project.metadata.name)}-000000"
            if not Realm.objects.filter(realm_id=steady).exists():
                options = replace(options, realm_id=steady)
    try:
        with transaction.atomic():
            realm = launch_realm(path, options)
            raise _RolledBack(_forecast(realm))
    except _RolledBack as done:
        return done.forecast
