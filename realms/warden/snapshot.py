"""The LiveSnapshot: what the Warden knows about a realm at one tick.

``build_snapshot`` gathers it from the database, the Chronicle and the shared folder;
termination, budget policy and nudges are then plain functions of the snapshot.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chronicle import selectors, tasks
from chronicle.kinds import Kind
from chronicle.models import now_ms as _now_ms
from ledger.services.spend import realm_spend
from realms.forge.layout import shared_dir
from realms.models import Realm, RealmAgent
from realms.packages.schema.common import parse_duration as package_duration
from realms.plan import RealmPlan, is_referee_role, plan_of, referee_of

SHARED_TEXT_LIMIT = 1_000_000  # bytes: larger files are counted but never read
SHARED_FILE_LIMIT = 5_000  # files read per tick; a runaway folder must not stall the tick


def parse_duration(text: str | float | int) -> float:
    """Seconds in a duration such as ``30s``, ``20m``, ``1h``, ``2d`` (bare numbers are seconds)."""
    if isinstance(text, bool):
        raise ValueError(f"duration: expected e.g. 30s, 20m, 1h or 2d; got {text!r}")
    if isinstance(text, int | float):
        return float(text)
    try:
        return package_duration(text)
    except ValueError:
        raise ValueError(f"duration: expected e.g. 30s, 20m, 1h or 2d; got {text!r}") from None


@dataclass(frozen=True)
class AgentState:
    """One agent's place in the roster, its spend against its cap, and its budget policy."""

    agent_id: str
    role: str = "participant"
    spend_usd: float = 0.0
    cap_usd: float | None = None
    on_exhausted: str = "starve"
    grace_s: float | None = None
    stopped: bool = False
    refused: bool = False
    """The gateway has refused a call for want of budget (the cap cannot fit another call)."""

    @property
    def is_referee(self) -> bool:
        return is_referee_role(self.role)

    @property
    def exhausted(self) -> bool:
        return self.cap_usd is not None and (self.refused or self.spend_usd >= self.cap_usd)


@dataclass(frozen=True)
class SeenMessage:
    """A non-system message: posted by an agent of the realm."""

    ts_ms: int
    sender: str
    channel: str  # the label (``commons``, ``a · b``) or the room id when unlabelled
    body: str

    @property
    def in_commons(self) -> bool:
        return self.channel == selectors.COMMONS_LABEL


@dataclass(frozen=True)
class LiveSnapshot:
    realm_id: str
    now_ms: int
    started_ms: int
    last_activity_ms: int
    messages: tuple[SeenMessage, ...] = ()
    shared_files: Mapping[str, str | None] = field(default_factory=dict)
    """Relative path → text (``None`` for binary or over 1 MB files)."""
    shared_changed_ms: int | None = None
    verdict: Mapping[str, Any] | None = None
    agents: Mapping[str, AgentState] = field(default_factory=dict)
    stop_requested: bool = False
    machine_state: str | None = None
    machine_terminal: frozenset[str] = frozenset()
    last_spend_ms: int | None = None
    referee_drives: bool = False
    tasks_total: int = 0
    tasks_done: int = 0

    @property
    def elapsed_s(self) -> float:
        return max(0, self.now_ms - self.started_ms) / 1000.0

    @property
    def idle_s(self) -> float:
        return max(0, self.now_ms - max(self.started_ms, self.last_activity_ms)) / 1000.0

    @property
    def participants(self) -> tuple[str, ...]:
        return tuple(a.agent_id for a in self.agents.values() if not a.is_referee)

    @property
    def live_participants(self) -> tuple[str, ...]:
        return tuple(a.agent_id for a in self.agents.values() if not a.is_referee and not a.stopped)

    @property
    def referee(self) -> str | None:
        return referee_of((a.agent_id, a.role) for a in self.agents.values())

    @property
    def total_spend_usd(self) -> float:
        return sum(a.spend_usd for a in self.agents.values())

    @property
    def last_progress_ms(self) -> int:
        """When anything last moved: an agent message, the shared folder, or spend."""
        marks = [self.started_ms]
        if self.messages:
            marks.append(max(m.ts_ms for m in self.messages))
        if self.shared_changed_ms is not None:
            marks.append(self.shared_changed_ms)
        if self.last_spend_ms is not None:
            marks.append(self.last_spend_ms)
        return max(marks)


def build_snapshot(
    realm_id: str, *, now_ms: int | None = None, started_ms: int | None = None
) -> LiveSnapshot:
    """Gather the realm's snapshot; ``started_ms`` defaults to its ``running`` event."""
    now = _now_ms() if now_ms is None else now_ms
    realm = Realm.objects.filter(realm_id=realm_id).first()
    if started_ms is None:
        running = selectors.lifecycle_events(realm_id, "running")
        started_ms = running[-1].ts_ms if running else now

    labels = selectors.channel_labels(realm_id)
    rows = (
        selectors.messages(realm_id)
        .exclude(sender_agent="")
        .values_list("ts_ms", "sender_agent", "channel", "body")
    )
    seen = tuple(
        SeenMessage(ts, sender, labels.get(channel, channel), body)
        for ts, sender, channel, body in rows
    )
    activity = [m.ts_ms for m in seen if m.in_commons]
    for kind in (Kind.PRIVATE, Kind.GAME, Kind.TASK):
        last = selectors.events(realm_id, kind).order_by("-ts_ms", "-id").first()
        if last is not None:
            activity.append(last.ts_ms)

    files, changed = read_shared_folder(shared_dir(realm_id))
    machine_state, terminal = machine_position(realm_id)
    # A realm known only to the Chronicle is planned from its ``running`` event.
    plan = plan_of(realm) if realm is not None else selectors.realm_plan(realm_id)
    board = tasks.board(realm_id)
    return LiveSnapshot(
        realm_id=realm_id,
        now_ms=now,
        started_ms=started_ms,
        last_activity_ms=max(activity, default=started_ms),
        messages=seen,
        shared_files=files,
        shared_changed_ms=changed,
        verdict=selectors.verdict(realm_id),
        agents=agent_states(realm_id, realm, plan),
        # The kill switch is the row's flag alone: pit_stop and the API set it.
        stop_requested=realm is not None and realm.stop_requested,
        machine_state=machine_state,
        machine_terminal=terminal,
        last_spend_ms=selectors.last_spend_ms(realm_id),
        referee_drives=plan.referee_opens,
        tasks_total=len(board),
        tasks_done=sum(t.state == "done" for t in board),
    )


def read_shared_folder(root: Path) -> tuple[dict[str, str | None], int | None]:
    """Text of the shared folder's files (≤1 MB, UTF-8) and when it last changed.

    Symlinks are never followed: an agent could point one at a file outside the realm.
    The change time covers folders too, so creating or deleting a file counts.
    """
    if not root.is_dir() or root.is_symlink():
        return {}, None
    files: dict[str, str | None] = {}
    latest = root.stat().st_mtime_ns
    for path in sorted(root.rglob("*")):
        if path.is_symlink():
            continue
        stat = path.stat()
        latest = max(latest, stat.st_mtime_ns)
        if not path.is_file() or len(files) >= SHARED_FILE_LIMIT:
            continue
        rel = path.relative_to(root).as_posix()
        files[rel] = None
        if stat.st_size <= SHARED_TEXT_LIMIT:
            with contextlib.suppress(UnicodeDecodeError, OSError):
                files[rel] = path.read_text(encoding="utf-8")
    return files, latest // 1_000_000


def agent_states(realm_id: str, realm: Realm | None, plan: RealmPlan) -> dict[str, AgentState]:
    """Roster order; caps from the ledger when it reports them, else from the realm's rows."""
    rows: list[dict[str, Any]] = []
    if realm is not None:
        for agent in RealmAgent.objects.filter(realm=realm).order_by("position"):
            rows.append(
                {
                    "id": agent.agent_id,
                    "role": agent.role,
                    "budget_usd": None if agent.budget_usd is None else float(agent.budget_usd),
                    "on_exhausted": agent.on_exhausted,
                    "row_stopped": agent.state
                    in (
                        RealmAgent.State.STOPPED,
                        RealmAgent.State.ELIMINATED,
                        RealmAgent.State.KILLED,
                    ),
                }
            )
    if not rows:
        rows = [
            {"id": a.id, "role": a.role, "budget_usd": a.budget_usd, "on_exhausted": a.on_exhausted}
            for a in selectors.realm_plan(realm_id).agents
        ]

    graces = {a.id: a.grace_s for a in plan.agents if a.grace_s is not None}
    ledger = _ledger_spend(realm_id)
    # The gateway's counters are live and cheap; summing spend events is the fallback
    # for realms whose keys are gone or were never minted here.
    spent: dict[str, float] = {}
    if not ledger:
        spent = {agent: total.usd for agent, total in selectors.spend_by_agent(realm_id).items()}
    caps: dict[str, float | None] = {}
    refused: set[str] = set()
    for agent_id, usage in ledger.items():
        spent[agent_id] = float(usage.get("usd") or 0.0)
        if usage.get("cap_usd") is not None:
            caps[agent_id] = float(usage["cap_usd"])
        if usage.get("exhausted"):
            refused.add(agent_id)
    stopped = selectors.stopped_agents(realm_id)

    states: dict[str, AgentState] = {}
    for row in rows:
        agent_id = str(row["id"])
        cap = caps.get(agent_id, row.get("budget_usd"))
        states[agent_id] = AgentState(
            agent_id=agent_id,
            role=str(row.get("role") or "participant"),
            spend_usd=spent.get(agent_id, 0.0),
            cap_usd=None if cap is None else float(cap),
            on_exhausted=str(row.get("on_exhausted") or "starve"),
            grace_s=graces.get(agent_id),
            stopped=agent_id in stopped or bool(row.get("row_stopped")),
            refused=agent_id in refused,
        )
    return states


def machine_position(realm_id: str) -> tuple[str | None, frozenset[str]]:
    """The state machine's current state and terminal states (``None`` without a machine).

    The state is replayed from the Chronicle: the declaration's ``initial`` on the last
    MACHINE event, then the ``to`` of every accepted GAME transition after it.
    """
    machine = selectors.events(realm_id, Kind.MACHINE).order_by("-ts_ms", "-id").first()
    if machine is None:
        return None, frozenset()
    declaration = machine.payload.get("declaration") or {}
    state = declaration.get("initial")
    terminal = frozenset(str(s) for s in declaration.get("terminal") or [])
    after = selectors.events(realm_id, Kind.GAME).filter(id__gt=machine.pk)
    for payload in after.values_list("payload", flat=True):
        if not isinstance(payload, dict) or payload.get("op") == "reject":
            continue
        target = payload.get("to")
        if isinstance(target, str) and target and target != "same":
            state = target
    return (str(state) if state is not None else None), terminal


def _ledger_spend(realm_id: str) -> dict[str, dict[str, Any]]:
    """The gateway's live per-agent figures: spend, cap and whether a call was refused."""
    return {
        agent: {"usd": usage.usd, "cap_usd": usage.cap_usd, "exhausted": usage.exhausted}
        for agent, usage in realm_spend(realm_id).items()
    }
