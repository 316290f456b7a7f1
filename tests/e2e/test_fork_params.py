"""A fork with a changed parameter: the relay example recorded at its default length, then
forked with ``-p rounds=3``, each command a subprocess as a user runs it.

The parameter is bound into the prose the agents are born with, so the fork reloads the
package and every agent's first request differs from the recorded one: the replay says
so (a divergence at the system prompt, then live) instead of answering with the recorded
reply to a question that was never asked.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.e2e.pitrun import REPO, read_chronicle, run_pit

EXAMPLE = REPO / "examples" / "relay"
AGENTS = ["amber", "basil", "cedar", "editor"]

pytestmark = pytest.mark.timeout(600)


def test_a_fork_with_a_changed_parameter_goes_live_where_the_prose_changed(
    tmp_path: Path,
) -> None:
    package, home = tmp_path / "relay", tmp_path / "home"
    shutil.copytree(EXAMPLE, package)
    code, out = run_pit(home, tmp_path / "up.log", "pit_up", str(package), "--realm", "relay-src")
    assert code == 0, out
    code, out = run_pit(
        home,
        tmp_path / "fork.log",
        "pit_fork",
        "relay-src",
        "--at",
        "+5",
        "-p",
        "rounds=3",
        "--as",
        "relay-fork",
    )
    assert code == 0, out

    source, fork = read_chronicle(home, "relay-src"), read_chronicle(home, "relay-fork")
    # Bound anew in the fork only; the recorded realm keeps its own values.
    [src_running] = [p for p in source.kinds("lifecycle") if p["event"] == "running"]
    [fork_running] = [p for p in fork.kinds("lifecycle") if p["event"] == "running"]
    assert src_running["config"]["parameters"]["rounds"] == "2"
    assert fork_running["config"]["parameters"]["rounds"] == "3"
    kickoffs = [body for who, body, _ in fork.messages if not who and "runs for" in body]
    assert kickoffs and "runs for 3 rounds" in kickoffs[0], kickoffs

    # Nobody is answered from a recording made under the other prose: each agent's first
    # recorded call that the fork reaches differs, and that agent goes live from there.
    notes = fork.kinds("replay")
    diverged = [n for n in notes if n["event"] == "diverged"]
    assert diverged, (notes, out)
    for note in diverged:
        assert note["then"] == "live" and note["path"].startswith("messages[0]"), note
        assert "2 rounds" in note["recorded"] and "3 rounds" in note["replayed"], note
    went_live = {n["agent"] for n in notes if n["event"] in ("diverged", "live")}
    assert went_live == set(AGENTS), (notes, out)
    assert "DIVERGED" in out, out
    spent = [p["usd"] for p in fork.kinds("spend")]
    assert any(c > 0 for c in spent)  # live calls are metered
