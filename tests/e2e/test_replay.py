"""Record, replay and fork on a real realm: the rps-duel example on the offline provider,
through the real gateway, bus and sandboxes, each command a subprocess as a user runs it.

One recorded realm serves every test of the module (they run in order): a replay of it,
a replay with a planted divergence, a fork with a changed script, and bad input.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.e2e.pitrun import REPO, Chronicle, pit_env, read_chronicle, run_pit

EXAMPLE = REPO / "examples" / "rps-duel"


@dataclass
class World:
    home: Path
    package: Path
    source: str
    chron: Chronicle

    @property
    def recording(self) -> Path:
        return self.home / "realms" / self.source / "recording"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    tmp = tmp_path_factory.mktemp("replay")
    package = tmp / "rps-duel"
    shutil.copytree(EXAMPLE, package)
    home = tmp / "home"
    code, out = run_pit(home, tmp / "up.log", "pit_up", str(package), "--realm", "duel-src")
    assert code == 0, out
    yield World(home, package, "duel-src", read_chronicle(home, "duel-src"))


def transcript(chron: Chronicle, realm_id: str) -> list[tuple[str, str]]:
    return [(who or "", body.replace(realm_id, "<realm>")) for who, body, _ in chron.messages]


def test_the_recording_has_each_call_and_no_key(world: World) -> None:
    spends: dict[str, int] = {}
    for payload in world.chron.kinds("spend"):
        spends[payload["agent"]] = spends.get(payload["agent"], 0) + 1
    indexes = sorted((world.recording / "calls").glob("*.jsonl"))
    assert [p.stem for p in indexes] == ["mara", "marshal", "tobin"]
    for index in indexes:
        rows = [json.loads(line) for line in index.read_text().splitlines()]
        # One line per metered call, numbered in order, each with its two blobs.
        assert [r["call"] for r in rows] == list(range(1, len(rows) + 1))
        assert len(rows) == spends[index.stem], index.stem
        for row in rows:
            for blob in (row["request"], row["response"]):
                assert (world.recording / "blobs" / f"{blob}.json").is_file()
        first = json.loads((world.recording / "blobs" / f"{rows[0]['request']}.json").read_text())
        assert first["messages"][0]["role"] == "system"
    text = b"".join(p.read_bytes() for p in world.recording.rglob("*") if p.is_file())
    assert b"bpk-" not in text and b"authorization" not in text.lower()
    # The archive carries the same recording.
    archived = world.home / "realms" / world.source / "archive" / "recording" / "calls"
    assert sorted(p.name for p in archived.iterdir()) == [p.name for p in indexes]


def test_a_replay_reproduces_the_transcript_at_no_cost(world: World, tmp_path: Path) -> None:
    code, out = run_pit(
        world.home,
        tmp_path / "replay.log",
        "pit_rerun",
        world.source,
        "--replay",
        "--as",
        "duel-replay",
    )
    assert code == 0, out
    assert "replay: every call matched the recording" in out, out
    replay = read_chronicle(world.home, "duel-replay")
    assert transcript(replay, "duel-replay") == transcript(world.chron, world.source)
    assert [r["conclusion_reason"] for r in replay.realms if r["realm_id"] == "duel-replay"] == [
        "referee_verdict"
    ]
    assert replay.kinds("spend") and all(p["usd"] == 0 for p in replay.kinds("spend"))
    assert "**total: $0.0000**" in out


def test_a_planted_divergence_is_reported_at_its_call(world: World, tmp_path: Path) -> None:
    index = world.recording / "calls" / "tobin.jsonl"
    original = index.read_text()
    rows = [json.loads(line) for line in original.splitlines()]
    blob = world.recording / "blobs" / f"{rows[2]['request']}.json"
    request = json.loads(blob.read_text())
    request["messages"][-1]["content"] = "a message the replay never sends"
    planted = json.dumps(request, sort_keys=True, separators=(",", ":")).encode()
    name = __import__("hashlib").sha256(planted).hexdigest()
    (world.recording / "blobs" / f"{name}.json").write_bytes(planted)
    rows[2]["request"] = name
    index.write_text("".join(json.dumps(r) + "\n" for r in rows))
    try:
        code, out = run_pit(
            world.home,
            tmp_path / "diverge.log",
            "pit_rerun",
            world.source,
            "--replay",
            "--as",
            "duel-div",
        )
    finally:
        index.write_text(original)
    assert code == 0, out
    assert "replay: DIVERGED: tobin call 3: the request differs at messages[" in out, out
    assert "a message the replay never sends" in out
    chron = read_chronicle(world.home, "duel-div")
    (diverged,) = [p for p in chron.kinds("replay") if p["event"] == "diverged"]
    assert (diverged["agent"], diverged["call"], diverged["then"]) == ("tobin", 3, "concluded")
    (realm,) = [r for r in chron.realms if r["realm_id"] == "duel-div"]
    assert (realm["state"], realm["conclusion_reason"]) == ("archived", "replay_diverged")


def test_a_fork_replays_up_to_its_point_then_goes_live(world: World, tmp_path: Path) -> None:
    # The fork point: the marshal scoring round 1. After it tobin plays R4 differently.
    point = next(i for i, kind, _ in world.chron.events if kind == "score")
    script = world.package / "offline" / "tobin.yaml"
    script.write_text(
        script.read_text().replace(
            'round: "R4", payload: "rock"', 'round: "R4", payload: "scissors"'
        )
    )
    code, out = run_pit(
        world.home,
        tmp_path / "fork.log",
        "pit_fork",
        world.source,
        "--at",
        str(point),
        "--as",
        "duel-fork",
    )
    assert code == 0, out
    fork = read_chronicle(world.home, "duel-fork")
    notes = fork.kinds("replay")
    live = {p["agent"]: p["call"] for p in notes if p["event"] == "live"}
    assert sorted(live) == ["mara", "marshal", "tobin"], (notes, out)
    assert not [p for p in notes if p["event"] == "diverged"], (notes, out)
    # Up to the point the transcript is the recorded one, message for message ...
    before = transcript(world.chron, world.source)
    after = transcript(fork, "duel-fork")
    db = sqlite3.connect(world.home / "bearpit.sqlite3")
    try:
        (upto,) = db.execute(
            "SELECT count(*) FROM chronicle_message WHERE realm_id = ? AND ts_ms <= "
            "(SELECT ts_ms FROM chronicle_event WHERE id = ?)",
            (world.source, point),
        ).fetchone()
    finally:
        db.close()
    assert upto >= 3 and after[:upto] == before[:upto], (upto, before, after)
    # ... then it is its own: tobin's changed R4 move shows in the reveal, and live calls cost.
    # (The marshal's lines are scripted text, so the messages may read the same.)
    reveals = [p for p in fork.kinds("reveal") if p.get("round") == "R4"]
    recorded = [p for p in world.chron.kinds("reveal") if p.get("round") == "R4"]
    assert "scissors" not in json.dumps(recorded), recorded
    assert reveals and "scissors" in json.dumps(reveals), (fork.kinds("reveal"), notes, out)
    spent = [p["usd"] for p in fork.kinds("spend")]
    assert 0 in spent and any(c > 0 for c in spent)


def test_bad_input_is_one_clear_line(world: World, tmp_path: Path) -> None:
    def refused(*args: str) -> str:
        proc = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=REPO,
            env=pit_env(world.home),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode != 0, proc.stdout
        lines = [line for line in proc.stderr.splitlines() if line.strip()]
        assert len(lines) == 1, proc.stderr
        return lines[0]

    assert "no such realm" in refused("pit_rerun", "nosuch-realm", "--replay")
    assert "no such realm" in refused("pit_fork", "nosuch-realm", "--at", "+5")
    assert "give an event id, an ISO time" in refused("pit_fork", world.source, "--at", "soon")
    assert "has no event 999999" in refused("pit_fork", world.source, "--at", "999999")
    archived = world.recording.parent / "archive" / "recording"
    aside = tmp_path / "aside"
    aside.mkdir()
    world.recording.rename(aside / "live")
    archived.rename(aside / "archived")
    try:
        line = refused("pit_rerun", world.source, "--replay")
    finally:
        (aside / "live").rename(world.recording)
        (aside / "archived").rename(archived)
    assert line == (
        "CommandError: replay refused: realm 'duel-src' has no recording of its model calls "
        "(BEARPIT_RECORD_CALLS)"
    )
