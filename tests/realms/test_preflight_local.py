"""``pit_up`` on the `local` provider with a model it cannot serve: one line naming the
problem, exit code 1, nothing created and nothing left running."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.pitrun import free_port, pit_env
from tests.realms.test_preflight import assert_refused, run_pit_up

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]


def test_a_missing_model_file_stops_pit_up_before_anything_starts(tmp_path: Path) -> None:
    home = tmp_path / "home"
    missing = tmp_path / "none.gguf"
    env = pit_env(home, BEARPIT_PROVIDER="local", BEARPIT_LOCAL_MODEL=str(missing))
    done = run_pit_up(home, env)
    assert_refused(
        done, home, f"BEARPIT_LOCAL_MODEL: no such file {missing}; name a GGUF model file"
    )
    assert not (home / "bearpit.sqlite3").exists()


def test_a_model_llama_cpp_cannot_load_is_one_line(tmp_path: Path) -> None:
    home = tmp_path / "home"
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"GGUF" + b"\x00" * 64)
    env = pit_env(
        home,
        BEARPIT_PROVIDER="local",
        BEARPIT_LOCAL_MODEL=str(broken),
        BEARPIT_LOCAL_PORT=str(free_port()),
    )
    done = run_pit_up(home, env)
    log = home / "run" / "local-model.log"
    assert_refused(
        done,
        home,
        f"the local model server exited (2): llama.cpp could not serve {broken}: Failed to "
        f"init server, please check the input params. (log: {log})",
    )


def test_another_provider_does_not_serve_the_model(tmp_path: Path) -> None:
    # The same missing file, but the realm runs offline: nothing checks or starts it.
    home = tmp_path / "home"
    env = pit_env(home, BEARPIT_LOCAL_MODEL=str(tmp_path / "none.gguf"))
    done = run_pit_up(home, env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "local model server" not in done.stdout
