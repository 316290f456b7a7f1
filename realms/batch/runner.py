"""Running a batch in the foreground on the embedded platform (``pit_batch``).

Each run is a normal realm: launched by ``launch_realm``, provisioned and ticked through
the same functions ``pit_up``'s driver uses. Up to ``concurrency`` realms are live at
once, and never more than the installation's capacity counting every other active
realm. A resumed batch first recovers the realms a killed run left live (re-attached, or
interrupted when they cannot be); an interrupted run is run again with a new realm, a
finished one never is.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from django.conf import settings

from realms.batch.report import headline, write_report
from realms.batch.service import finish_batch, progress, record_realm
from realms.embedded import driver
from realms.models import Batch, Realm
from realms.services.conclude import interrupt_realm
from realms.services.launch import LaunchOptions, launch_realm
from realms.services.providers import ProviderChoice
from realms.services.queue import active_realms
from realms.warden.watch import finish_concluding, tick_realm

Say = Callable[[str], None]


def _label(batch: Batch, index: int) -> str:
    params = batch.runs[index]["parameters"]
    shown = " ".join(f"{k}={v}" for k, v in params.items() if k in batch.grid)
    return f"run {index + 1}/{batch.count}" + (f" [{shown}]" if shown else "")


def _index_of(batch: Batch, realm_id: str) -> int:
    return int(next(r["index"] for r in batch.runs if r["realm_id"] == realm_id))


class BatchRunner:
    def __init__(self, batch_id: str, choice: ProviderChoice, say: Say) -> None:
        self.batch_id = batch_id
        self.choice = choice
        self.say = say
        self.live: list[str] = []
        self._said_full = False

    def batch(self) -> Batch:
        return Batch.objects.get(batch_id=self.batch_id)

    def recover(self) -> None:
        """Re-attach (or interrupt) the realms a killed run of this batch left live."""
        batch = self.batch()
        for realm_id in progress(batch).live:
            state = driver.resume(realm_id, self.say)
            if state == Realm.State.RUNNING:
                self.live.append(realm_id)
            elif state == Realm.State.PENDING:
                interrupt_realm(realm_id, "the batch stopped before this realm was provisioned")

    def _start(self, batch: Batch, index: int) -> None:
        realm = launch_realm(
            Path(batch.package_path),
            LaunchOptions(parameters=dict(batch.runs[index]["parameters"]), choice=self.choice),
        )
        record_realm(batch.batch_id, index, realm.realm_id)
        self.say(f"{_label(batch, index)}: launched {realm.realm_id}")
        if driver.provision_in_foreground(realm.realm_id, self.say) == Realm.State.RUNNING:
            self.live.append(realm.realm_id)
        else:
            self._ended(realm.realm_id)

    def _fill(self) -> bool:
        """Launch runs while there is room; whether any run is still waiting to start."""
        batch = self.batch()
        state = progress(batch)
        waiting = sorted(state.rerun + state.unstarted)
        while waiting and len(self.live) < batch.concurrency:
            if active_realms() >= settings.BEARPIT_MAX_ACTIVE_REALMS:
                if not self.live and not self._said_full:
                    self.say(
                        f"waiting: {settings.BEARPIT_MAX_ACTIVE_REALMS} realms are active "
                        "(BEARPIT_MAX_ACTIVE_REALMS); the next run starts when one ends"
                    )
                    self._said_full = True
                break
            self._said_full = False
            self._start(batch, waiting.pop(0))
            batch = self.batch()
        return bool(waiting)

    def _ended(self, realm_id: str) -> None:
        batch = self.batch()
        realm = Realm.objects.get(realm_id=realm_id)
        why = realm.conclusion_reason or str(realm.state)
        outcome = f" — {realm.outcome}" if realm.outcome else ""
        self.say(f"{_label(batch, _index_of(batch, realm_id))}: {realm.state} by {why}{outcome}")

    def _tick(self) -> None:
        for realm_id in list(self.live):
            state = Realm.objects.values_list("state", flat=True).get(realm_id=realm_id)
            if state == Realm.State.RUNNING:
                ticked = tick_realm(realm_id)
                if ticked is not None and ticked.concluded is not None:
                    finish_concluding(realm_id)
                state = Realm.objects.values_list("state", flat=True).get(realm_id=realm_id)
            if state in Realm.TERMINAL_STATES:
                self.live.remove(realm_id)
                self._ended(realm_id)

    def run(self, tick_s: float | None = None) -> None:
        """Until every run has ended. Ctrl-C interrupts the live realms (a resume runs
        them again) and leaves the batch to be continued."""
        every = settings.BEARPIT_TICK_SECONDS if tick_s is None else tick_s
        batch = self.batch()
        self.say(
            f"batch: {batch.batch_id} — {batch.count} runs of {batch.package_name}, "
            f"{batch.concurrency} at a time; intended: {', '.join(batch.intended)}"
        )
        try:
            self.recover()
            while True:
                waiting = self._fill()
                if not waiting and not self.live:
                    break
                self._tick()
                time.sleep(every)
        except KeyboardInterrupt:
            self.say(f"batch: interrupted — resume with --resume {self.batch_id}")
            for realm_id in self.live:
                interrupt_realm(realm_id, "the batch was interrupted by the operator")
            raise

    def finish(self) -> str:
        """Write the report and return where it is."""
        batch = finish_batch(self.batch_id)
        data, folder = write_report(batch)
        self.say(f"report: {headline(data)}")
        self.say(f"report: {folder / 'report.md'}")
        return str(folder)
