"""The foreground driver: run one realm to its end from the calling process, with a
progress line per phase.

``pit_up`` and ``pit_rerun`` use it in the embedded default: it provisions the realm
through the same service function the ``realms.provision`` task calls, then ticks it
(through the same claimed ``tick_realm``) until it is archived, printing live counts
every few seconds. Where a worker queues the teardown of a realm its tick ended as the
``warden.conclude`` task, the driver runs it itself. Ctrl-C concludes the realm as
``manual``; the report is written either way.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from django.conf import settings

from chronicle import selectors
from chronicle.report import render_report
from chronicle.tracelog import latest_failure
from realms.forge import layout
from realms.models import Realm
from realms.services.conclude import conclude_realm, finish_conclusion
from realms.services.provision import bring_up_realm
from realms.services.recovery import recover_realms
from realms.warden.watch import finish_concluding, tick_realm

Say = Callable[[str], None]


@dataclass
class Counts:
    messages: int
    events: int
    spend_usd: float

    def line(self) -> str:
        return (
            f"running: {self.messages} messages, {self.events} events, ${self.spend_usd:.4f} spent"
        )


# Progress is what the agents did (messages, model spend): events keep coming from the
# Warden's own turns and the trace ingestion even when every model call fails.
QUIET_AFTER_LINES = 3


def progress_line(realm_id: str, now: Counts, quiet_s: float | None) -> str:
    """The running line; after a quiet spell, why the realm may be stuck."""
    if quiet_s is None:
        return now.line()
    why = latest_failure(realm_id)
    return f"{now.line()} — no progress for {quiet_s:.0f}s" + (f"; {why}" if why else "")


def counts(realm_id: str) -> Counts:
    spend = selectors.spend_by_agent(realm_id)
    return Counts(
        messages=selectors.message_count(realm_id),
        events=selectors.event_count(realm_id),
        spend_usd=sum(t.usd for t in spend.values()),
    )


def _state(realm_id: str) -> str:
    return str(Realm.objects.values_list("state", flat=True).get(realm_id=realm_id))


def provision_in_foreground(realm_id: str, say: Say) -> str:
    """Provision the realm and mark it running, here; its state afterwards."""
    say(f"provision: realm {realm_id} — bus, keys, birth configs, sandboxes")
    began = time.monotonic()
    bring_up_realm(realm_id)
    state = _state(realm_id)
    if state == Realm.State.RUNNING:
        agents = Realm.objects.get(realm_id=realm_id).agents.count()
        say(f"provision: {agents} agents started in {time.monotonic() - began:.1f}s")
    return state


def run_to_end(
    realm_id: str,
    say: Say,
    *,
    tick_s: float | None = None,
    progress_s: float | None = None,
    max_s: float | None = None,
) -> str:
    """Tick until the realm is over; returns its final state. Ctrl-C → ``manual``."""
    tick_every = settings.BEARPIT_TICK_SECONDS if tick_s is None else tick_s
    progress_every = settings.BEARPIT_PROGRESS_EVERY_S if progress_s is None else progress_s
    started = last_line = moved_at = time.monotonic()
    last_progress: tuple[int, float] | None = None
    announced_end = False
    try:
        while True:
            state = _state(realm_id)
            if state == Realm.State.RUNNING:
                ticked = tick_realm(realm_id)
                if ticked is not None and ticked.concluded is not None:
                    finish_concluding(realm_id)
                state = _state(realm_id)
            if state not in (Realm.State.RUNNING, Realm.State.PROVISIONING):
                break
            now = time.monotonic()
            if max_s is not None and now - started > max_s:
                conclude_realm(realm_id, "manual", f"the run passed its {max_s:.0f}s limit")
                break
            if now - last_line >= progress_every:
                current = counts(realm_id)
                if (current.messages, current.spend_usd) != last_progress:
                    last_progress, moved_at = (current.messages, current.spend_usd), now
                quiet = now - moved_at
                quiet_s = quiet if quiet >= QUIET_AFTER_LINES * progress_every else None
                say(progress_line(realm_id, current, quiet_s))
                last_line = now
            time.sleep(tick_every)
    except KeyboardInterrupt:
        say("concluding: manual — interrupted by the operator (Ctrl-C)")
        announced_end = True
        if (
            not conclude_realm(
                realm_id, "manual", "interrupted by the operator (Ctrl-C)", grace_s=1.0
            )
            and _state(realm_id) == Realm.State.CONCLUDING
        ):
            # Ctrl-C landed inside a conclusion already under way: finish its teardown.
            finish_conclusion(realm_id, announce_end=False)
    realm = Realm.objects.get(realm_id=realm_id)
    if not announced_end and realm.conclusion_reason:
        say(f"concluding: {realm.conclusion_reason} — {realm.conclusion_detail}")
    say(f"{realm.state}: {realm_id} — {counts(realm_id).line().removeprefix('running: ')}")
    archive = layout.archive_dir(realm_id)
    if realm.state == Realm.State.ARCHIVED and (archive / "manifest.json").is_file():
        say(f"archive: {archive}")
    return str(realm.state)


def resume(realm_id: str, say: Say) -> str:
    """Recover one realm left live by a crash; its state after recovery."""
    outcome = recover_realms(only=realm_id, force=True)
    say(f"recover: {realm_id} {outcome.get(realm_id, 'left alone')}")
    return _state(realm_id)


def report(realm_id: str) -> str:
    return render_report(realm_id)
