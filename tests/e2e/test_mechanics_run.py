"""Shared runner for the mechanics realms: ``pit_up`` on one package under ``packages/``.

Each realm runs exactly as a user would run it (subprocess, fresh home, offline
provider through the real gateway, real bus and sandboxes); afterwards the test
reads the Chronicle straight from the realm's SQLite database.
"""

from __future__ import annotations

import shutil
import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.e2e.pitrun import (
    Chronicle,
    leftover_pids,
    pit_env,
    read_chronicle,
    start_pit,
    stop_everything,
)

PACKAGES = Path(__file__).resolve().parent / "packages"


@dataclass
class RealmRun:
    code: int
    out: str
    chron: Chronicle
    home: Path
    took: float
    leftovers: list[int]

    @property
    def realm(self) -> dict[str, Any]:
        (realm,) = self.chron.realms
        return realm

    @property
    def realm_dir(self) -> Path:
        return self.home / "realms" / str(self.realm["realm_id"])

    def event_ms(self, kind: str, **subset: Any) -> list[int]:
        """``ts_ms`` of every event of ``kind`` whose payload holds ``subset``."""
        ids = {
            i
            for i, k, p in self.chron.events
            if k == kind and all(p.get(key) == value for key, value in subset.items())
        }
        db = sqlite3.connect(self.home / "bearpit.sqlite3")
        try:
            rows = db.execute("SELECT id, ts_ms FROM chronicle_event ORDER BY id").fetchall()
        finally:
            db.close()
        return [int(ts) for i, ts in rows if i in ids]

    def message_ms(self, agent: str) -> list[int]:
        db = sqlite3.connect(self.home / "bearpit.sqlite3")
        try:
            rows = db.execute(
                "SELECT ts_ms FROM chronicle_message WHERE sender_agent = ? ORDER BY id", (agent,)
            ).fetchall()
        finally:
            db.close()
        return [int(ts) for (ts,) in rows]

    def said(self, agent: str) -> list[str]:
        return [body for who, body, _eid in self.chron.messages if who == agent]

    def system_posts(self) -> list[str]:
        return [body for who, body, _eid in self.chron.messages if not who]

    def turns(self, event: str | None = None) -> list[dict[str, Any]]:
        return [t for t in self.chron.kinds("turn") if t.get("event") == event]

    def order(self, *needles: tuple[str, dict[str, Any]]) -> list[int]:
        """Chronicle ids of the first event matching each ``(kind, subset)``, in order given."""
        found = []
        for kind, subset in needles:
            ids = [
                i
                for i, k, p in self.chron.events
                if k == kind and all(p.get(key) == value for key, value in subset.items())
            ]
            assert ids, f"no {kind} event with {subset}"
            found.append(ids[0])
        return found


def run_realm(
    tmp_path: Path,
    package: str | Path,
    *,
    timeout: float = 120,
    args: Sequence[str] = (),
    **env: str,
) -> RealmRun:
    """``pit_up`` a copy of ``packages/<package>`` (or of the folder ``package`` names) to
    its conclusion, with ``args`` added to the command line, and read what it left."""
    source = package if isinstance(package, Path) else PACKAGES / package
    copy = tmp_path / source.name
    shutil.copytree(source, copy)
    home, log = tmp_path / "home", tmp_path / "pit_up.log"
    began = time.monotonic()
    # -v 2: the platform's log lines too (the tool-call audit among them), which some
    # mechanics tests read and which a failure's output should show.
    proc = start_pit(["pit_up", str(copy), "-v", "2", *args], pit_env(home, **env), log)
    try:
        code = proc.wait(timeout=timeout)
        left = leftover_pids(home)
    finally:
        stop_everything(home, proc)
    out = log.read_text(encoding="utf-8", errors="replace")
    assert code == 0, out
    return RealmRun(code, out, read_chronicle(home), home, time.monotonic() - began, left)


def assert_clean_ending(run: RealmRun, reason: str) -> None:
    """The realm concluded for ``reason``, archived, and pit_up stopped all it started."""
    assert run.chron.lifecycle()[:2] == ["provisioning", "running"], run.out
    assert run.chron.lifecycle()[-2:] == ["concluding", "archived"], run.out
    concluding = [p for p in run.chron.kinds("lifecycle") if p.get("event") == "concluding"]
    assert [p["reason"] for p in concluding] == [reason], run.out
    assert run.realm["state"] == "archived" and run.realm["conclusion_reason"] == reason
    ending = [b for b in run.system_posts() if b.startswith("REALM_ENDING")]
    assert len(ending) == 1 and ending[0].startswith(f"REALM_ENDING — {reason}:"), ending
    assert f"concluding: {reason} — " in run.out
    assert run.leftovers == []
