"""A realm that really ran, for the commands that read one: ``pit_up examples/toolcheck``
on its own BEARPIT_HOME (as a user would), then each command as a subprocess."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from tests.e2e.pitrun import REPO, pit_env, read_chronicle, start_pit, stop_everything


@dataclass(frozen=True)
class Home:
    path: Path
    env: dict[str, str]

    def manage(self, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        """``manage.py ARGS`` in this home."""
        return self._run([sys.executable, "manage.py", *args], stdin)

    def pit(self, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        """``pit ARGS``, through the console script's entry point."""
        return self._run([sys.executable, "-m", "bearpit.cli", *args], stdin)

    def _run(self, argv: list[str], stdin: str | None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            argv,
            cwd=REPO,
            env=self.env,
            input=stdin if stdin is not None else "",
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )


@dataclass(frozen=True)
class RanRealm(Home):
    realm_id: str


def migrated_home(path: Path) -> Home:
    home = Home(path, pit_env(path))
    done = home.manage("migrate", "-v0")
    assert done.returncode == 0, done.stderr
    return home


def run_toolcheck(path: Path) -> RanRealm:
    env = pit_env(path)
    log = path.parent / f"{path.name}-pit_up.log"
    proc = start_pit(["pit_up", "examples/toolcheck"], env, log)
    try:
        code = proc.wait(timeout=150)
    finally:
        stop_everything(path, proc)
    assert code == 0, log.read_text(encoding="utf-8")
    (realm,) = read_chronicle(path).realms
    assert realm["state"] == "archived", realm
    return RanRealm(path, env, str(realm["realm_id"]))
