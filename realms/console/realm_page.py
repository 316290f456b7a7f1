"""What the realm page shows, read from the realm's status, plan and Chronicle.

Windowed: the newest messages and timeline events are rendered, older ones come a page
at a time, so a realm with thousands of messages opens as fast as a small one.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field, replace
from typing import Any

from django.db.models import Max, Q

from chronicle import selectors
from chronicle.kinds import Kind, Lifecycle
from chronicle.models import Event, Message
from realms.api.status import realm_status
from realms.console import feed, timeline
from realms.models import RealmAgent

WINDOW = 200
COLOURS = 8


@dataclass(frozen=True)
class AgentCard:
    id: str
    name: str
    colour: int
    referee: bool
    state: str
    model: str
    spend: float
    cap: float | None
    score: float | None
    out: str
    """``eliminated``, ``killed``, ``starved`` or empty."""

    @property
    def spend_pct(self) -> int:
        if not self.cap:
            return 0
        return max(0, min(100, round(100 * self.spend / self.cap)))

    @property
    def bar_class(self) -> str:
        pct = self.spend_pct
        return "full" if pct >= 100 else "high" if pct >= 80 else ""


@dataclass(frozen=True)
class Channel:
    room: str
    label: str
    private: bool


@dataclass
class RealmPage:
    realm_id: str
    status: dict[str, Any]
    agents: list[AgentCard]
    channels: list[Channel]
    referee: str | None
    turn: dict[str, Any]
    messages: list[dict[str, Any]]
    earlier: str | None
    events: list[dict[str, Any]]
    after_event: int
    after_ts: int
    charts: dict[str, Any] = field(default_factory=dict)

    def script_data(self) -> dict[str, Any]:
        """What the page's script needs, as data (json_script escapes it)."""
        return {
            "realm_id": self.realm_id,
            "state": self.status["state"],
            "after_event": self.after_event,
            "after_ts": self.after_ts,
            "agents": [{"id": a.id, "colour": a.colour, "cap": a.cap} for a in self.agents],
            "channels": {c.room: {"label": c.label, "private": c.private} for c in self.channels},
            "referee": self.referee,
            "charts": self.charts,
        }


def _turn(realm_id: str) -> dict[str, Any]:
    latest = selectors.events(realm_id, Kind.TURN).order_by("-id").first()
    p = latest.payload if latest is not None and isinstance(latest.payload, dict) else {}
    return {"round": p.get("round"), "current": p.get("current")}


def _cards(realm_id: str, status: dict[str, Any]) -> tuple[list[AgentCard], str | None]:
    plan = selectors.realm_plan(realm_id)
    rows = {
        r.agent_id: r.state
        for r in RealmAgent.objects.filter(realm__realm_id=realm_id).only("agent_id", "state")
    }
    keys = selectors.minted_keys(realm_id)
    eliminated = selectors.eliminated_agents(realm_id)
    starved = {
        str(e.payload.get("agent"))
        for e in selectors.lifecycle_events(realm_id, Lifecycle.BUDGET_EXHAUSTED)
    }
    ids = [a.id for a in plan.agents] or sorted(set(status["spend"]) | set(status["scores"]))
    by_id = {a.id: a for a in plan.agents}
    referee = next((a.id for a in plan.agents if a.is_referee), None)
    cards = []
    for i, agent_id in enumerate(ids):
        planned = by_id.get(agent_id)
        state = rows.get(agent_id, "")
        out = (
            "eliminated"
            if agent_id in eliminated or state == RealmAgent.State.ELIMINATED
            else "killed"
            if state == RealmAgent.State.KILLED
            else "starved"
            if agent_id in starved
            else ""
        )
        score = status["scores"].get(agent_id)
        cards.append(
            AgentCard(
                id=agent_id,
                name=(planned.name if planned else None) or agent_id,
                colour=i % COLOURS,
                referee=agent_id == referee,
                state=state or "unknown",
                model=str(
                    keys.get(agent_id, {}).get("model") or (planned.model if planned else "")
                ),
                spend=float(status["spend"].get(agent_id, 0.0)),
                cap=planned.budget_usd if planned else None,
                score=None if score is None else float(score),
                out=out,
            )
        )
    return cards, referee


def channels(realm_id: str) -> list[Channel]:
    labels = selectors.channel_labels(realm_id)
    commons = selectors.commons_room(realm_id)
    found = [Channel(room, label, room != commons) for room, label in labels.items()]
    return sorted(found, key=lambda c: (c.private, c.label))


def _charts(realm_id: str, agents: list[AgentCard], upto: int) -> dict[str, Any]:
    """Spend (cumulative USD per agent) and score (running total) as points over time,
    from the events up to ``upto`` (the page's script adds the later ones)."""
    spend: dict[str, list[list[float]]] = {a.id: [] for a in agents}
    chronicled = Event.objects.filter(realm_id=realm_id, pk__lte=upto).order_by("ts_ms", "id")
    for ts, p in chronicled.filter(kind=Kind.SPEND).values_list("ts_ms", "payload"):
        agent = p.get("agent") if isinstance(p, dict) else None
        if isinstance(agent, str):
            spend.setdefault(agent, []).append([ts, float(p.get("cumulative") or 0.0)])
    score: dict[str, list[list[float]]] = {a.id: [] for a in agents if not a.referee}
    totals: dict[str, float] = {}
    for ts, p in chronicled.filter(kind=Kind.SCORE).values_list("ts_ms", "payload"):
        agent = p.get("agent") if isinstance(p, dict) else None
        delta = p.get("delta") if isinstance(p, dict) else None
        if isinstance(agent, str) and isinstance(delta, int | float):
            totals[agent] = totals.get(agent, 0.0) + float(delta)
            score.setdefault(agent, []).append([ts, totals[agent]])
    return {"spend": spend, "score": score, "start": selectors.started_ms(realm_id)}


def message_window(realm_id: str, before: tuple[int, int] | None = None) -> list[Message]:
    """The ``WINDOW`` messages before ``(ts_ms, id)`` (else the newest), oldest first."""
    qs = Message.objects.filter(realm_id=realm_id)
    if before is not None:
        ts, pk = before
        qs = qs.filter(Q(ts_ms__lt=ts) | Q(ts_ms=ts, pk__lt=pk))
    rows = list(qs.order_by("-ts_ms", "-id")[:WINDOW])
    rows.reverse()
    return rows


def earlier_cursor(realm_id: str, rows: list[Message]) -> str | None:
    """The "show earlier" cursor when messages older than ``rows`` exist."""
    if not rows:
        return None
    first = rows[0]
    older = Message.objects.filter(realm_id=realm_id).filter(
        Q(ts_ms__lt=first.ts_ms) | Q(ts_ms=first.ts_ms, pk__lt=first.pk)
    )
    return f"{first.ts_ms}.{first.pk}" if older.exists() else None


def parse_cursor(raw: str) -> tuple[int, int]:
    ts, _, pk = raw.partition(".")
    if not (ts.isdigit() and pk.isdigit() and len(raw) <= 40):
        raise ValueError(f"before: expected <ts_ms>.<id> as the page gave it, got {raw[:40]!r}")
    return int(ts), int(pk)


def clock(ts_ms: int) -> str:
    """``HH:MM:SS`` in UTC, as the page's script writes the live ones."""
    return dt.datetime.fromtimestamp(ts_ms / 1000, tz=dt.UTC).strftime("%H:%M:%S")


def colours(realm_id: str) -> dict[str, int]:
    """Agent id → its colour slot, in roster order (as the cards have them)."""
    return {a.id: i % COLOURS for i, a in enumerate(selectors.realm_plan(realm_id).agents)}


def message_items(
    rows: list[Message], colour_of: dict[str, int], channels: list[Channel]
) -> list[dict[str, Any]]:
    """Transcript rows: the feed's payload, plus how the page shows it."""
    by_room = {c.room: c for c in channels}
    items = []
    for m in rows:
        channel = by_room.get(m.channel)
        items.append(
            {
                **feed.message_row(m),
                "colour": colour_of.get(m.sender_agent),
                "clock": clock(m.ts_ms),
                "label": channel.label if channel else m.channel,
                "private": channel.private if channel else False,
            }
        )
    return items


def _events(realm_id: str, upto: int) -> list[dict[str, Any]]:
    qs = Event.objects.filter(realm_id=realm_id, pk__lte=upto)
    qs = qs.exclude(kind__in=list(timeline.HIDDEN))
    rows = list(qs.order_by("-id")[:WINDOW])
    rows.reverse()
    shown = [p for e in rows for p in feed.event_row(e) if p["kind"] == "event"]
    return [{**p, "clock": clock(p["ts"])} for p in shown]


def realm_page(realm_id: str) -> RealmPage | None:
    """The page of a realm, or ``None`` when no realm of that id is known."""
    if not selectors.realm_known(realm_id):
        return None
    # Read the cursors first: whatever lands after them comes over the websocket.
    after_event = Event.objects.filter(realm_id=realm_id).aggregate(m=Max("id"))["m"] or 0
    status = realm_status(realm_id)
    cards, referee = _cards(realm_id, status)
    charts = _charts(realm_id, cards, after_event)
    if status["outcome"] is None:
        # Until a verdict rules, the cards count the score events the charts hold, so a
        # later one the websocket brings is added exactly once.
        totals = {agent: points[-1][1] for agent, points in charts["score"].items() if points}
        cards = [replace(c, score=totals.get(c.id, c.score)) for c in cards]
    rows = message_window(realm_id)
    after_ts = max((m.ts_ms for m in rows), default=0)
    rooms = channels(realm_id)
    return RealmPage(
        realm_id=realm_id,
        status=status,
        agents=cards,
        channels=rooms,
        referee=referee,
        turn=_turn(realm_id),
        messages=message_items(rows, {c.id: c.colour for c in cards}, rooms),
        earlier=earlier_cursor(realm_id, rows),
        events=_events(realm_id, after_event),
        after_event=after_event,
        after_ts=after_ts,
        charts=charts,
    )
