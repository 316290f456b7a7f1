"""Reading the Chronicle: what a realm's events and messages say about it.

Every function here is a read; nothing writes. Figures (scores, spend, state) are
derived from the append-only rows so they can always be recomputed from history.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import Max, QuerySet

from chronicle.kinds import Kind, Lifecycle
from chronicle.models import Event, Message
from ledger.models import ProviderProfile
from realms.ids import is_realm_id
from realms.models import Realm, RealmAgent
from realms.plan import RealmPlan, plan_of

# Lifecycle values that describe the realm as a whole; the others (budget_exhausted,
# agent_killed, teardown_error) are about one agent or one step and never a realm state.
REALM_STATES = frozenset(
    {
        Lifecycle.PROVISIONING,
        Lifecycle.RUNNING,
        Lifecycle.CONCLUDING,
        Lifecycle.ARCHIVED,
        Lifecycle.FAILED,
        Lifecycle.INTERRUPTED,
    }
)

COMMONS_LABEL = "commons"
# The seeded keyless profile; the scripted transport is what makes its prices nominal.
OFFLINE_PROVIDER = "offline"
SCRIPTED = ProviderProfile.Transport.SCRIPTED


def events(realm_id: str, kind: Kind | str | None = None) -> QuerySet[Event]:
    """A realm's events in chronicle order, optionally of one kind."""
    qs = Event.objects.filter(realm_id=realm_id)
    if kind is not None:
        qs = qs.filter(kind=str(kind))
    return qs.order_by("ts_ms", "id")


def messages(realm_id: str) -> QuerySet[Message]:
    """A realm's messages in chronicle order."""
    return Message.objects.filter(realm_id=realm_id).order_by("ts_ms", "id")


def last_messages(realm_id: str, limit: int) -> list[Message]:
    """The realm's newest ``limit`` messages, oldest first."""
    newest = list(messages(realm_id).order_by("-ts_ms", "-id")[: max(limit, 0)])
    newest.reverse()
    return newest


def payloads(realm_id: str, kind: Kind | str) -> list[dict[str, Any]]:
    return [_as_dict(p) for p in events(realm_id, kind).values_list("payload", flat=True)]


def lifecycle_events(realm_id: str, value: Lifecycle | str) -> list[Event]:
    """The LIFECYCLE events whose ``event`` is ``value``, oldest first."""
    return list(events(realm_id, Kind.LIFECYCLE).filter(payload__event=str(value)))


def last_lifecycle(realm_id: str) -> Event | None:
    """The latest lifecycle event that names a realm state."""
    for event in events(realm_id, Kind.LIFECYCLE).order_by("-ts_ms", "-id").iterator():
        if _as_dict(event.payload).get("event") in REALM_STATES:
            return event
    return None


def lifecycle_state(realm_id: str) -> str | None:
    """The realm's chronicled state: the ``event`` of its latest realm-level lifecycle event."""
    event = last_lifecycle(realm_id)
    return None if event is None else str(event.payload["event"])


def running_payload(realm_id: str) -> dict[str, Any] | None:
    """The payload of the latest ``running`` lifecycle event (rooms, run_config, project)."""
    found = lifecycle_events(realm_id, Lifecycle.RUNNING)
    return _as_dict(found[-1].payload) if found else None


def realm_plan(realm_id: str) -> RealmPlan:
    """The realm's plan as its ``running`` event chronicled it, else from its row (a realm
    that never ran), else an empty plan (a realm known to neither)."""
    running = running_payload(realm_id)
    if running is not None:
        return RealmPlan.parse(running.get("project"), running.get("config"))
    row = Realm.objects.filter(realm_id=realm_id).first()
    return plan_of(row) if row is not None else RealmPlan()


def run_config(realm_id: str) -> dict[str, Any]:
    """The realm's ``run_config`` as chronicled on its ``running`` event, else ``{}``."""
    running = running_payload(realm_id) or {}
    return _as_dict(running.get("config"))


def conclusion(realm_id: str) -> dict[str, Any] | None:
    """``{reason, detail}`` of the latest ``concluding`` event, if the realm concluded."""
    found = lifecycle_events(realm_id, Lifecycle.CONCLUDING)
    return _as_dict(found[-1].payload) if found else None


def started_ms(realm_id: str) -> int | None:
    """When the realm started running (its first ``running`` event)."""
    found = lifecycle_events(realm_id, Lifecycle.RUNNING)
    return found[0].ts_ms if found else None


@dataclass(frozen=True)
class Termination:
    kind: str
    evidence: str


def termination(realm_id: str) -> Termination | None:
    """Why the realm ended: the concluding event's reason and detail, else its failure."""
    concluded = conclusion(realm_id)
    if concluded is not None:
        return Termination(str(concluded.get("reason") or ""), str(concluded.get("detail") or ""))
    failed = lifecycle_events(realm_id, Lifecycle.FAILED)
    if failed:
        return Termination(
            str(Lifecycle.FAILED), str(_as_dict(failed[-1].payload).get("detail") or "")
        )
    return None


@dataclass(frozen=True)
class Elimination:
    agent: str | None
    """``None`` when the referee closed a round and removed nobody."""
    reason: str
    issued_by: str
    ts_ms: int
    round: int | None


def eliminations(realm_id: str) -> list[Elimination]:
    """ELIMINATION events in chronicle order, each with the round it fell in."""
    found: list[Elimination] = []
    for event in events(realm_id, Kind.ELIMINATION):
        p = _as_dict(event.payload)
        agent = p.get("agent")
        found.append(
            Elimination(
                agent=agent if isinstance(agent, str) else None,
                reason=str(p.get("reason") or ""),
                issued_by=str(p.get("issued_by") or ""),
                ts_ms=event.ts_ms,
                round=_round_at(realm_id, event),
            )
        )
    return found


def eliminated_agents(realm_id: str) -> frozenset[str]:
    """Agents named by an ELIMINATION event (a round closed with nobody out names none)."""
    named = events(realm_id, Kind.ELIMINATION).values_list("payload", flat=True)
    return frozenset(
        agent
        for agent in (_as_dict(p).get("agent") for p in named)
        if isinstance(agent, str) and agent
    )


def agents_out(realm_id: str) -> frozenset[str]:
    """Who is out, the one rule the Warden and realmtools ask: eliminated by the referee,
    or stopped for good by the platform (a budget kill)."""
    stopped = RealmAgent.objects.filter(
        realm__realm_id=realm_id,
        state__in=[RealmAgent.State.ELIMINATED, RealmAgent.State.KILLED],
    ).values_list("agent_id", flat=True)
    return eliminated_agents(realm_id) | frozenset(stopped)


def _round_at(realm_id: str, event: Event) -> int | None:
    """The round in play when ``event`` was written: the latest TURN event before it.

    Right after ``round_complete`` the referee is resolving the round that completed, so
    that round is the one meant, not the next.
    """
    before = events(realm_id, Kind.TURN).filter(ts_ms__lte=event.ts_ms, id__lt=event.pk)
    latest = before.order_by("-ts_ms", "-id").values_list("payload", flat=True).first()
    p = _as_dict(latest)
    value = p.get("completed") if p.get("event") == "round_complete" else p.get("round")
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else None


def minted_keys(realm_id: str) -> dict[str, dict[str, Any]]:
    """Agent id → its latest KEY payload: provider, model, transport, prices."""
    keys: dict[str, dict[str, Any]] = {}
    for p in payloads(realm_id, Kind.KEY):
        if isinstance(p.get("agent"), str):
            keys[p["agent"]] = p
    return keys


def nominal_agents(realm_id: str) -> dict[str, str]:
    """Agents whose model calls were priced nominally, with the provider they ran on.

    The scripted provider charges small made-up prices so that metering and caps are
    exercised; its spend is not money. The agents' minted keys say which transport served
    them; a realm chronicled without them falls back to the provider its ``running``
    event names.
    """
    keys = minted_keys(realm_id)
    if keys:
        return {
            agent: str(key.get("provider") or "")
            for agent, key in sorted(keys.items())
            if key.get("transport") == SCRIPTED
        }
    if realm_plan(realm_id).provider == OFFLINE_PROVIDER:
        return dict.fromkeys(spend_by_agent(realm_id), OFFLINE_PROVIDER)
    return {}


def scoreboard(realm_id: str) -> dict[str, float]:
    """Summed SCORE deltas per agent (rounded to 1e-6), highest first."""
    totals: dict[str, float] = {}
    for p in payloads(realm_id, Kind.SCORE):
        agent = p.get("agent")
        if not isinstance(agent, str):
            continue
        totals[agent] = totals.get(agent, 0.0) + _number(p.get("delta"))
    rounded = {agent: round(total, 6) + 0.0 for agent, total in totals.items()}
    return dict(sorted(rounded.items(), key=lambda item: (-item[1], item[0])))


def violations(realm_id: str) -> list[dict[str, Any]]:
    """VIOLATION payloads ``{agent, reason, issued_by}`` in chronicle order."""
    return [p for p in payloads(realm_id, Kind.VIOLATION) if isinstance(p.get("agent"), str)]


def verdict(realm_id: str) -> dict[str, Any] | None:
    """The latest VERDICT payload (tallies are their own kind and never count)."""
    found = payloads(realm_id, Kind.VERDICT)
    return found[-1] if found else None


@dataclass(frozen=True)
class AgentSpendTotal:
    usd: float
    tokens_in: int
    tokens_out: int


def spend_by_agent(realm_id: str) -> dict[str, AgentSpendTotal]:
    """Model spend per agent from SPEND events (deltas summed), sorted by agent id."""
    usd: dict[str, float] = {}
    tokens_in: dict[str, int] = {}
    tokens_out: dict[str, int] = {}
    for p in payloads(realm_id, Kind.SPEND):
        agent = p.get("agent")
        if not isinstance(agent, str):
            continue
        usd[agent] = usd.get(agent, 0.0) + _number(p.get("usd"))
        tokens_in[agent] = tokens_in.get(agent, 0) + int(_number(p.get("tokens_in")))
        tokens_out[agent] = tokens_out.get(agent, 0) + int(_number(p.get("tokens_out")))
    return {
        agent: AgentSpendTotal(usd[agent], tokens_in[agent], tokens_out[agent])
        for agent in sorted(usd)
    }


def last_spend_ms(realm_id: str) -> int | None:
    """When spend last grew (SPEND events are written on growth only)."""
    value = events(realm_id, Kind.SPEND).aggregate(last=Max("ts_ms"))["last"]
    return None if value is None else int(value)


@dataclass(frozen=True)
class ToolUse:
    calls: int
    usd: float


def tool_use(realm_id: str) -> dict[str, ToolUse]:
    """Granted-tool calls and their cost per agent, from TOOL_RESULT events."""
    calls: dict[str, int] = {}
    usd: dict[str, float] = {}
    for p in payloads(realm_id, Kind.TOOL_RESULT):
        agent = p.get("agent")
        if not isinstance(agent, str):
            continue
        calls[agent] = calls.get(agent, 0) + 1
        usd[agent] = usd.get(agent, 0.0) + _number(p.get("cost_usd"))
    return {agent: ToolUse(calls[agent], usd[agent]) for agent in sorted(calls)}


def message_count(realm_id: str, *, agents_only: bool = False) -> int:
    qs = Message.objects.filter(realm_id=realm_id)
    if agents_only:
        qs = qs.exclude(sender_agent="")
    return qs.count()


def event_count(realm_id: str) -> int:
    return Event.objects.filter(realm_id=realm_id).count()


def chronicled_realm_ids() -> list[str]:
    """Realm ids with any chronicled event, most recently active first.

    The ledger chronicles the keys and spend of callers that are not realms (Scribe's
    sessions) under ids no realm can have; those are not realms, so they are left out.
    """
    rows = (
        Event.objects.values("realm_id")
        .annotate(last=Max("ts_ms"))
        .order_by("-last", "realm_id")
        .values_list("realm_id", flat=True)
    )
    return [realm_id for realm_id in rows if is_realm_id(realm_id)]


def commons_room(realm_id: str) -> str | None:
    running = running_payload(realm_id) or {}
    room = running.get("commons_room")
    return room if isinstance(room, str) and room else None


def channel_labels(realm_id: str) -> dict[str, str]:
    """Room id → label: ``commons`` for the Commons, ``a · b`` for DM rooms.

    Labels come from the ``running`` event (``commons_room`` and ``side_channels``);
    a channel that is not named there keeps its room id.
    """
    running = running_payload(realm_id) or {}
    labels: dict[str, str] = {}
    for room, label in _as_dict(running.get("side_channels")).items():
        if isinstance(label, str):
            labels[str(room)] = label
    commons = running.get("commons_room")
    if isinstance(commons, str) and commons:
        labels[commons] = COMMONS_LABEL
    return labels


def stopped_agents(realm_id: str) -> set[str]:
    """Agents whose sandbox the platform stopped (elimination or budget kill)."""
    stopped: set[str] = set()
    for p in payloads(realm_id, Kind.SYSTEM):
        if p.get("event") == "agent_stopped" and isinstance(p.get("agent"), str):
            stopped.add(p["agent"])
    for event in lifecycle_events(realm_id, Lifecycle.AGENT_KILLED):
        agent = _as_dict(event.payload).get("agent")
        if isinstance(agent, str):
            stopped.add(agent)
    return stopped


def _as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _number(value: Any) -> float:
    if isinstance(value, bool):
        return 0.0
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return 0.0
    return 0.0


def realm_known(realm_id: str) -> bool:
    """Whether the realm has a row or any chronicled event."""
    return (
        Realm.objects.filter(realm_id=realm_id).exists()
        or Event.objects.filter(realm_id=realm_id).exists()
    )
