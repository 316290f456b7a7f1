"""Launching a replay or a fork of a recorded realm, and saying how it went.

``replay_realm`` launches the realm's snapshot again with ``run_config.replay`` telling
the gateway to answer every call from the recording (``ledger.gateway.replay_backend``);
``fork_realm`` launches the same package, with parameters changed if asked, replaying
each agent's calls that had been answered by the fork point and going live after them.
Bad input raises ``LaunchError`` and creates nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from django.db import transaction

from chronicle import selectors
from chronicle.kinds import Kind
from chronicle.models import Event
from realms.models import Realm
from realms.plan import plan_of
from realms.replay import recording
from realms.services.launch import LaunchError, LaunchOptions, launch_realm, launch_snapshot
from realms.services.rerun import rerun_realm

OnDivergence = Literal["conclude", "live"]
_SECONDS = re.compile(r"^\+(\d+(\.\d+)?)s?$")


def check_recorded(realm_id: str) -> str:
    """The realm id, when the realm exists and has a recording; else LaunchError."""
    _recorded(realm_id)
    return realm_id


def _recorded(realm_id: str) -> Realm:
    old = Realm.objects.filter(realm_id=realm_id).first()
    if old is None:
        raise LaunchError([f"realm {realm_id!r}: no such realm"])
    if recording.find(realm_id) is None:
        raise LaunchError(
            [f"realm {realm_id!r} has no recording of its model calls (BEARPIT_RECORD_CALLS)"]
        )
    return old


def _mark(realm: Realm, replay: dict[str, Any]) -> Realm:
    realm.run_config = {**realm.run_config, "replay": replay}
    realm.save(update_fields=["run_config", "updated_at"])
    return realm


@transaction.atomic
def replay_realm(
    realm_id: str,
    *,
    new_realm_id: str | None = None,
    provider: str | None = None,
    on_divergence: OnDivergence = "conclude",
) -> Realm:
    """A pending realm that runs ``realm_id`` again from its recording."""
    _recorded(realm_id)
    realm = rerun_realm(realm_id, "snapshot", new_realm_id=new_realm_id, provider=provider)
    return _mark(
        realm,
        {"source": realm_id, "mode": "replay", "limits": None, "on_divergence": on_divergence},
    )


def fork_point_ms(realm_id: str, at: str) -> int:
    """``at`` as a Unix time in ms: an event id, an ISO time, or ``+seconds`` from start."""
    text = at.strip()
    start = selectors.started_ms(realm_id)
    seconds = _SECONDS.match(text)
    if seconds:
        if start is None:
            raise LaunchError([f"--at {at}: realm {realm_id!r} never started running"])
        return start + int(float(seconds.group(1)) * 1000)
    if text.isdigit():
        event = Event.objects.filter(realm_id=realm_id, pk=int(text)).first()
        if event is None:
            raise LaunchError([f"--at {at}: realm {realm_id!r} has no event {text}"])
        return int(event.ts_ms)
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise LaunchError(
            [f"--at {at}: give an event id, an ISO time (2026-12-01T18:00:00Z) or +seconds"]
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    point = int(moment.timestamp() * 1000)
    if start is not None and point < start:
        raise LaunchError([f"--at {at}: before realm {realm_id!r} started running"])
    return point


def fork_limits(realm_id: str, point_ms: int) -> dict[str, int]:
    """Per agent: how many of its recorded calls had been answered by the fork point."""
    folder = recording.find(realm_id)
    assert folder is not None
    return {
        agent: sum(1 for c in recording.calls(folder, agent) if c.ended_ms <= point_ms)
        for agent in recording.agents(folder)
    }


@transaction.atomic
def fork_realm(
    realm_id: str,
    at: str,
    *,
    parameters: dict[str, str] | None = None,
    provider: str | None = "offline",
    new_realm_id: str | None = None,
) -> Realm:
    """A pending realm of the same package that replays up to ``at``, then goes live."""
    old = _recorded(realm_id)
    point = fork_point_ms(realm_id, at)
    limits = fork_limits(realm_id, point)
    old_plan = plan_of(old)
    params = {name: str(value) for name, value in old_plan.parameters.items()}
    changed = dict(parameters or {})
    options = LaunchOptions(
        realm_id=new_realm_id,
        parameters={**params, **changed},
        allow_missing_parameters=True,
        free_response=old_plan.free_response,
        provider=provider or old.provider or None,
    )
    if changed:
        # Parameters are bound into the snapshot at launch: a change reloads the package.
        if not old.package_path:
            raise LaunchError([f"realm {realm_id!r} has no package path to bind -p values in"])
        realm = launch_realm(old.package_path, options)
    elif old.project:
        realm = launch_snapshot(
            old.project, options, package=old.package_path, parameters=options.parameters
        )
    else:
        raise LaunchError([f"realm {realm_id!r} has no stored snapshot"])
    return _mark(
        realm,
        {
            "source": realm_id,
            "mode": "fork",
            "at": at,
            "at_ms": point,
            "limits": limits,
            "on_divergence": "live",
            "parameters": changed,
        },
    )


@dataclass(frozen=True)
class Summary:
    lines: list[str]
    diverged: dict[str, Any] | None


def summary(realm_id: str) -> Summary:
    """What the replay or fork did, from its Chronicle and the two recordings."""
    config = Realm.objects.filter(realm_id=realm_id).values_list("run_config", flat=True).first()
    replay = (config or {}).get("replay") or {}
    source = str(replay.get("source") or "")
    notes = selectors.payloads(realm_id, Kind.REPLAY)
    lines: list[str] = []
    diverged = next((n for n in notes if n.get("event") == "diverged"), None)
    folder, mine = recording.find(source) if source else None, recording.find(realm_id)
    for agent in recording.agents(folder) if folder else []:
        had = len(recording.calls(folder, agent)) if folder else 0
        made = len(recording.calls(mine, agent)) if mine else 0
        limit = (replay.get("limits") or {}).get(agent)
        upto = f", replayed up to call {limit}" if limit is not None else ""
        lines.append(f"replay: {agent}: {made} calls made, {had} recorded in {source}{upto}")
    for note in notes:
        if note.get("event") == "diverged":
            where = f" at {note['path']}" if note.get("path") else ""
            lines.append(
                f"replay: DIVERGED: {note.get('agent')} call {note.get('call')}: "
                f"{note.get('why')}{where}; then {note.get('then')}"
            )
            if note.get("path"):
                lines.append(f"  recorded: {note.get('recorded')}")
                lines.append(f"  now:      {note.get('replayed')}")
        elif note.get("event") == "live":
            lines.append(f"replay: {note.get('agent')} went live at call {note.get('call')}")
        elif note.get("event") == "exhausted":
            lines.append(
                f"replay: {note.get('agent')} call {note.get('call')} is past the recording "
                f"({note.get('recorded')} calls); then {note.get('then')}"
            )
    if diverged is None and replay.get("mode") == "replay":
        lines.append("replay: every call matched the recording")
    return Summary(lines, diverged)
