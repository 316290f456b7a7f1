"""One Warden tick over a running realm.

Order: floor moves an earlier tick left unmade → kickoff (once) → feed new Commons
speech to the TurnManager → enforce new ELIMINATION events → silence handling → deliver
PRIVATE events → the loop watch over the new speech and traced tool calls
(``spec.loops``) → machine wakes → termination check → commit → the TurnManager's floor
moves → traces → stale task leases → schedules and wakes → snapshot → budget policy →
nudges → termination → the claim of the conclusion (``concluding``). The teardown runs
apart from the tick (``realms.warden.watch``): its grace period must not hold a
worker's tick.

The TurnManager decides as speech comes in, but its floor moves are posted last: a
DM sent with a floor-passing post reaches its recipient before that recipient's
grant, and a realm that is over grants nobody another turn.

Other bus side effects (deliveries, wakes, nudges) happen before the matching state is
committed, so a tick that fails half-way is simply redone by the next one: the
Chronicle never holds an event twice, at worst a notice is posted twice. The floor
moves go the other way round (``realms.warden.outbox``): a turn is chronicled, with
its moves stored beside the tick's state, before the bus hears of it, so what an
agent does on the grant or the referee's cue is chronicled after the turn.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.db.models import QuerySet

from chronicle.kinds import Kind
from chronicle.models import Event, Message, now_ms
from chronicle.selectors import agents_out
from chronicle.services import record_event
from realms.forge.services import stop_agent_sandbox
from realms.herald import floor, posting
from realms.herald.directory import get_bus
from realms.herald.matrix import MatrixError, matrix_client
from realms.herald.models import BusRoom
from realms.herald.reconcile import reconcile
from realms.models import Realm, RealmAgent
from realms.plan import plan_of
from realms.realmtools.machine.service import due_idle_nudges
from realms.realmtools.taskboard_leases import expire_leases
from realms.services import traces
from realms.services.conclude import begin_conclusion
from realms.services.kickoff import kickoff_mentions, kickoff_text
from realms.warden import budget, loops, nudges, outbox, termination
from realms.warden.dms import Deliver, DmLedger, Notice, Private, plan_deliveries
from realms.warden.models import WardenState
from realms.warden.snapshot import LiveSnapshot, build_snapshot
from realms.warden.turns import (
    Action,
    Grant,
    OpenFloor,
    Post,
    TurnConfig,
    TurnEvent,
    TurnManager,
    TurnState,
)
from realms.warden.wakes import drive_wakes

log = logging.getLogger(__name__)

WAKE_TEXT = "@{agent} — the machine is waiting on you. Call game_state."
TRACE_EVERY_TICKS = 5
MIRROR_CHECK_EVERY_TICKS = 15


@dataclass
class TickResult:
    realm_id: str
    state: str
    turn_actions: int = 0
    deliveries: int = 0
    eliminated: list[str] = field(default_factory=list)
    concluded: str | None = None


def turn_config(realm: Realm) -> TurnConfig | None:
    plan = plan_of(realm)
    turns = plan.turns
    if turns is None:
        return None
    return TurnConfig(
        participants=list(plan.participants),
        referee=plan.referee,
        driving=plan.referee_drives,
        referee_cue=turns.referee_cue,
        min_rounds=turns.min_rounds_before_verdict,
        silence_timeout_s=turns.silence_timeout_s,
        retire_after_misses=turns.retire_after_misses,
        referee_rules=plan.verdict_ends_realm,
    )


def _turn_manager(realm: Realm, state: WardenState) -> TurnManager | None:
    if state.turns:
        return TurnManager(TurnState.from_json(state.turns))
    config = turn_config(realm)
    return TurnManager.create(config) if config else None


def _kickoff(realm: Realm, tm: TurnManager | None, now_s: float) -> list[Action]:
    """Post the kickoff; the opening floor moves, to chronicle and carry out."""
    plan = plan_of(realm)
    text = kickoff_text(plan)
    mentions = kickoff_mentions(plan)
    actions: list[Action] = tm.start(now_s) if tm else []
    # A driving referee's opener cue is folded into the kickoff: one post, one wake.
    if actions and isinstance(actions[0], Grant) and actions[0].agent is None:
        cue = actions.pop(0)
        assert isinstance(cue, Grant)
        floor.grant_floor(realm.realm_id, None, plan.referee)
        text = f"{text}\n\n{cue.text}"
        mentions = list(cue.mentions)
    posting.announce(realm.realm_id, text, mentions)
    return actions


def _make_moves(realm: Realm, state: WardenState, moves: Sequence[outbox.Entry]) -> None:
    if moves:
        outbox.carry_out(realm.realm_id, plan_of(realm).referee, state.pk, moves)


class Stream:
    """Rows of one kind not consumed yet, read through a cursor that tolerates late commits.

    Ids are allocated at insert but a concurrent writer may commit after a higher id is
    already visible (PostgreSQL). So each read looks back ``LOOKBACK`` ids behind the
    cursor and skips the ids it already consumed there: nothing is lost, nothing read twice.
    """

    LOOKBACK = 200

    def __init__(self, cursors: dict[str, Any], name: str) -> None:
        self.cursors, self.name = cursors, name
        self.after = int(cursors.get(name, 0))
        self.seen = {int(i) for i in cursors.get(f"{name}_seen", [])}
        self.fresh: list[Any] = []

    def read(self, rows: QuerySet[Any]) -> list[Any]:
        floor_id = max(0, self.after - self.LOOKBACK)
        found = [r for r in rows.filter(id__gt=floor_id).order_by("id") if r.id not in self.seen]
        self.fresh = found
        return found

    def commit(self) -> None:
        ids = self.seen | {r.id for r in self.fresh}
        top = max([self.after, *ids]) if ids else self.after
        self.cursors[self.name] = top
        self.cursors[f"{self.name}_seen"] = sorted(i for i in ids if i > top - self.LOOKBACK)


def _stop_eliminated(realm_id: str, agent: str, stopped: list[str]) -> dict[str, Any] | None:
    """Stop an eliminated agent's sandbox exactly once; the SYSTEM payload to chronicle."""
    if agent in stopped:
        return None
    stopped.append(agent)
    try:
        stop_agent_sandbox(realm_id, agent, "eliminated")
    except Exception as exc:
        log.warning("stopping eliminated %s/%s failed: %s", realm_id, agent, exc)
        return {"event": "agent_stop_failed", "agent": agent, "reason": "eliminated"}
    return {"event": "agent_stopped", "agent": agent, "reason": "eliminated"}


def _dm_rooms(realm_id: str) -> dict[str, str]:
    bus = get_bus(realm_id)
    return {
        room.label: room.room_id for room in bus.rooms.filter(kind=BusRoom.Kind.DM) if room.label
    }


def _deliver(realm_id: str, plan: Iterable[Deliver | Notice]) -> int:
    sent = 0
    for action in plan:
        if isinstance(action, Deliver):
            posting.post_as_agent(
                realm_id, action.sender, action.room_id, action.text, [action.recipient]
            )
            sent += 1
        else:
            posting.system_notice(realm_id, action.room_id, action.text)
    return sent


def _wake_list(games: Sequence[Event]) -> list[str]:
    """The agents this tick's machine steps wake, in order."""
    woken: list[str] = []
    for event in games:
        wake = event.payload.get("wake") if isinstance(event.payload, dict) else None
        woken += [agent for agent in wake or [] if isinstance(agent, str) and agent]
    return woken


def _wakes(realm_id: str, games: Sequence[Event]) -> None:
    for agent in _wake_list(games):
        posting.announce(realm_id, WAKE_TEXT.format(agent=agent), [agent])


def _idle_nudges(realm_id: str, now: int) -> list[dict[str, Any]]:
    """``after_s`` wake rules: nudge once per quiet spell of the machine (format §3.8)."""
    due = due_idle_nudges(realm_id, now)
    if not due:
        return []
    sent = {
        (p.get("rule"), p.get("since_event"))
        for p in Event.objects.filter(realm_id=realm_id, kind=Kind.SYSTEM).values_list(
            "payload", flat=True
        )
        if isinstance(p, dict) and p.get("event") == "machine_nudge"
    }
    recorded: list[dict[str, Any]] = []
    for nudge in due:
        if (nudge.rule, nudge.since_event) in sent:
            continue
        for agent in nudge.agents:
            posting.announce(realm_id, WAKE_TEXT.format(agent=agent), [agent])
        recorded.append(
            {
                "event": "machine_nudge",
                "rule": nudge.rule,
                "since_event": nudge.since_event,
                "agents": list(nudge.agents),
            }
        )
    return recorded


def run_tick(realm_id: str) -> TickResult:
    """One tick. Returns quietly for a realm that is not running."""
    realm = Realm.objects.filter(realm_id=realm_id).first()
    if realm is None or realm.state != Realm.State.RUNNING:
        return TickResult(realm_id, realm.state if realm else "gone")
    state, _ = WardenState.objects.get_or_create(realm=realm)
    result = TickResult(realm_id, realm.state)
    now = now_ms()
    now_s = now / 1000.0
    tm = _turn_manager(realm, state)
    cursors = dict(state.cursors)
    system_events: list[dict[str, Any]] = []

    # Moves a tick chronicled but did not get onto the bus come before anything new.
    _make_moves(realm, state, state.outbox)
    if not state.kicked_off:
        # Committed on its own, at once: a tick failing later must not kick off twice.
        opening, opening_moves = outbox.split(_kickoff(realm, tm, now_s))
        with transaction.atomic():
            for payload in opening:
                record_event(realm_id, Kind.TURN, payload)
            WardenState.objects.filter(pk=state.pk).update(
                kicked_off=True,
                turns=tm.state.to_json() if tm is not None else {},
                outbox=opening_moves,
            )
        state.kicked_off = True
        _make_moves(realm, state, opening_moves)

    bus = get_bus(realm_id)
    if state.ticks % MIRROR_CHECK_EVERY_TICKS == 0:
        _mirror_check(realm_id)
    streams = {
        name: Stream(cursors, name)
        for name in ("message", "elimination", "lifecycle", "private", "game")
    }
    events = Event.objects.filter(realm_id=realm_id)
    speech: list[Message] = streams["message"].read(
        Message.objects.filter(realm_id=realm_id, channel=bus.commons_room_id)
    )
    eliminations: list[Event] = streams["elimination"].read(events.filter(kind=Kind.ELIMINATION))
    # The TurnManager decides now; its floor moves are carried out only after this tick's
    # DMs are delivered, termination is checked and the tick is committed (``_floor_moves``).
    moves: list[Action] = []
    if tm is not None:
        for msg in speech:
            moves += tm.observe(msg.sender_agent or None, msg.body, msg.ts_ms / 1000.0)
    stopped = list(state.stopped_agents)
    for event in eliminations:
        agent = event.payload.get("agent") if isinstance(event.payload, dict) else None
        if isinstance(agent, str) and agent:
            result.eliminated.append(agent)
            done = _stop_eliminated(realm_id, agent, stopped)
            if done is not None:
                system_events.append(done)
        if tm is not None:
            moves += tm.remove(agent if isinstance(agent, str) and agent else None, now_s)
    kills: list[Event] = streams["lifecycle"].read(events.filter(kind=Kind.LIFECYCLE))
    for event in kills:
        agent = event.payload.get("agent") if isinstance(event.payload, dict) else None
        if tm is not None and event.payload.get("event") == "agent_killed" and agent:
            moves += tm.remove(str(agent), now_s, by="platform")
    if tm is not None:
        moves += tm.tick(now_s)

    privates: list[Event] = streams["private"].read(events.filter(kind=Kind.PRIVATE))
    ledger = DmLedger.from_json(state.dms)
    if privates:
        plan = plan_deliveries(
            [
                Private(
                    str(e.payload.get("from")), str(e.payload.get("to")), str(e.payload.get("text"))
                )
                for e in privates
            ],
            rooms=_dm_rooms(realm_id),
            eliminated=set(agents_out(realm_id)),
            quotas=plan_of(realm).dm_quotas(),
            round_number=tm.state.round if tm is not None else None,
            ledger=ledger,
        )
        result.deliveries = _deliver(realm_id, plan)
    games: list[Event] = streams["game"].read(events.filter(kind=Kind.GAME))
    looping = _watch_loops(realm, cursors, speech, streams, events, system_events)
    # Termination first: a realm that ends at this tick wakes, nudges and hands the floor
    # to nobody. The check costs a snapshot, so it is made only when something would post.
    posts = _moves_floor(moves) or _wake_list(games) or due_idle_nudges(realm_id, now)
    ending = _conclusion(realm) if posts else None
    if ending is None and looping is not None:
        ending = termination.loop_conclusion(looping.detail)
    if ending is None:
        _wakes(realm_id, games)
        system_events += _idle_nudges(realm_id, now)
    turn_events, floor_moves = _floor_moves(moves, ending)

    for stream in streams.values():
        stream.commit()
    with transaction.atomic():
        for payload in turn_events:
            record_event(realm_id, Kind.TURN, payload)
        for payload in system_events:
            record_event(realm_id, Kind.SYSTEM, payload)
        if result.eliminated:
            RealmAgent.objects.filter(realm=realm, agent_id__in=result.eliminated).update(
                state=RealmAgent.State.ELIMINATED
            )
        WardenState.objects.filter(pk=state.pk).update(
            turns=tm.state.to_json() if tm is not None else {},
            dms=ledger.to_json(),
            cursors=cursors,
            stopped_agents=stopped,
            kicked_off=state.kicked_off,
            ticks=state.ticks + 1,
            failures=0,
            outbox=floor_moves,
        )
    result.turn_actions = len(turn_events)
    _make_moves(realm, state, floor_moves)

    if state.ticks % TRACE_EVERY_TICKS == 0:
        traces.ingest_all(realm_id)
    board = plan_of(realm).task_board
    if board is not None:
        expire_leases(realm_id, board, now)
    if ending is None:
        drive_wakes(realm_id, plan_of(realm), now)

    _police(realm, result, ending)
    return result


def _watch_loops(
    realm: Realm,
    cursors: dict[str, Any],
    speech: Sequence[Message],
    streams: dict[str, Stream],
    events: QuerySet[Event],
    system_events: list[dict[str, Any]],
) -> loops.Loop | None:
    """Loop and echo detection over this tick's new speech and traced tool calls: nudge
    the agent, or return the loop that ends the realm (``spec.loops.action``)."""
    plan = plan_of(realm).loops
    if plan is None:
        return None
    # Only realms that watch for loops read (and so advance) the tool-call stream.
    stream = streams.setdefault("tool_call", Stream(cursors, "tool_call"))
    traced: list[Event] = stream.read(events.filter(kind=Kind.TRACE, payload__type="tool_call"))
    found = loops.watch(
        plan,
        cursors,
        [loops.Spoken(m.id, m.ts_ms, m.sender_agent, m.body) for m in speech],
        [_called(e) for e in traced],
    )
    for loop in found:
        system_events.append(loop.event(plan.action))
        if plan.action == "nudge":
            posting.announce(realm.realm_id, loop.nudge_text(), [loop.agent])
    return loops.first_ending(found, plan)


def _called(event: Event) -> loops.Called:
    payload = event.payload if isinstance(event.payload, dict) else {}
    raw = payload.get("data")
    data: dict[str, Any] = raw if isinstance(raw, dict) else {}
    return loops.Called(
        event.id,
        event.ts_ms,
        str(payload.get("agent_id") or ""),
        str(data.get("name") or ""),
        data.get("arguments"),
    )


def _moves_floor(actions: Sequence[Action]) -> bool:
    return any(isinstance(a, Grant | Post | OpenFloor) for a in actions)


def _floor_moves(
    moves: Sequence[Action], ending: termination.Conclusion | None
) -> tuple[list[dict[str, Any]], list[outbox.Entry]]:
    """The turn events to record and the floor moves to make, unless the realm ends at
    this tick.

    A referee's closing post resumes the rotation like any other, so a realm that is over
    hands nobody the floor: only the records of what already happened (removals, skips, a
    completed round) are kept then.
    """
    if ending is None:
        return outbox.split(moves)
    return [a.payload for a in moves if isinstance(a, TurnEvent) and "event" in a.payload], []


def _conclusion(
    realm: Realm, snapshot: LiveSnapshot | None = None
) -> termination.Conclusion | None:
    return termination.evaluate(
        snapshot or build_snapshot(realm.realm_id),
        termination.realm_conditions(plan_of(realm)),
        verdict_ends_realm=plan_of(realm).verdict_ends_realm,
    )


def _mirror_check(realm_id: str) -> None:
    """Make sure the Chronicle holds what the bus holds before speech is fed to turns.

    A ping makes the homeserver send pushes it held back after a failed transaction at
    once (not after its retry delay); reconciling reads the realm's rooms back and
    mirrors whatever a push never delivered. Both are idempotent.
    """
    try:
        with matrix_client(timeout=5.0) as client:
            client.ping()
        reconcile(realm_id)
    except (MatrixError, OSError) as exc:
        log.info("mirror check of %s: %s", realm_id, exc)


def _police(realm: Realm, result: TickResult, ending: termination.Conclusion | None) -> None:
    """Budget policy, nudges and termination over a fresh snapshot.

    ``ending``: the realm was already found over before its floor moved; it concludes
    with that reason, and nobody is nudged on the way out.
    """
    realm_id = realm.realm_id
    if ending is not None:
        _begin(result, ending)
        return
    snapshot = build_snapshot(realm_id)
    # Budgets first: a spent cap is chronicled (budget_exhausted) even on the tick it
    # ends the realm. Then a realm that ends now is nudged for silence by nobody.
    budget.enforce_budgets(snapshot, stop_agent=lambda agent: _budget_stop(realm_id, agent))
    conclusion = _conclusion(realm, snapshot)
    if conclusion is not None:
        _begin(result, conclusion)
        return
    nudges.nudge_if_stalled(
        snapshot,
        post=lambda text, mentions: posting.announce(realm_id, text, mentions),
        enabled=plan_of(realm).stall_nudge,
    )


def _begin(result: TickResult, ending: termination.Conclusion) -> None:
    """Claim the conclusion; ``concluded`` only when this tick claimed it, since a
    conclusion someone else began (``pit_stop``) is theirs to tear down."""
    if begin_conclusion(result.realm_id, ending.reason, ending.detail):
        result.concluded = ending.reason
        result.state = Realm.State.CONCLUDING


def _budget_stop(realm_id: str, agent: str) -> None:
    stop_agent_sandbox(realm_id, agent, "budget exhausted")
