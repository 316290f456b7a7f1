from __future__ import annotations

import re
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from chronicle.kinds import Kind
from chronicle.models import now_ms
from realms.models import Realm
from tests.chronicle.realmkit import event, make_realm, running, say

pytestmark = [pytest.mark.timeout(30), pytest.mark.django_db]

REALM = "cli-abc123"


@pytest.fixture(autouse=True)
def _home(settings, tmp_path):
    settings.BEARPIT_HOME = tmp_path / "home"


def run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def build() -> None:
    make_realm(REALM, state=Realm.State.RUNNING, project={"metadata": {"name": "CLI"}})
    running(REALM, ts=1_000)
    for i in range(25):
        say(REALM, f"message {i}", 2_000 + i, agent="alice" if i % 2 else "bob")
    event(REALM, Kind.SPEND, {"agent": "alice", "usd": 0.0123}, 3_000)
    event(REALM, Kind.SPEND, {"agent": "bob", "usd": 0.5}, 3_001)


@pytest.mark.parametrize("command", ["pit_status", "pit_tail", "pit_archive", "pit_stop"])
def test_an_unknown_realm_is_a_clear_error(command):
    with pytest.raises(CommandError, match="'ghost-000000': no such realm"):
        run(command, "ghost-000000")


def test_status_shows_state_events_and_spend():
    build()
    out = run("pit_status", REALM)
    assert "state:    running\n" in out
    assert "events:   4\n" in out  # the launch's TOOL_MANIFEST and three more
    assert "  alice: $0.0123\n" in out and "  bob: $0.5000\n" in out
    assert "  total: $0.5123\n" in out


def test_status_without_spend():
    make_realm("idle-abc123")
    assert "(no spend recorded)" in run("pit_status", "idle-abc123")


def test_tail_prints_the_last_messages():
    build()
    lines = run("pit_tail", REALM).splitlines()
    assert len(lines) == 20
    assert lines[-1] == "[1970-01-01 00:00:02] commons · bob: message 24"
    assert run("pit_tail", REALM, "-n", "2").splitlines() == [
        "[1970-01-01 00:00:02] commons · alice: message 23",
        "[1970-01-01 00:00:02] commons · bob: message 24",
    ]
    with pytest.raises(CommandError, match="--limit"):
        run("pit_tail", REALM, "-n", "0")


def test_tail_prints_one_line_per_message_and_full_prints_all():
    make_realm(REALM, state=Realm.State.RUNNING)
    running(REALM, ts=now_ms())
    say(REALM, "Rules:\n- one\n" + "z" * 400, now_ms(), agent="umpire")
    short = run("pit_tail", REALM).splitlines()
    assert len(short) == 1
    assert re.fullmatch(r"\[\d\d:\d\d:\d\d\] commons · umpire: Rules: - one z+…", short[0])
    full = run("pit_tail", REALM, "--full")
    assert full.endswith(" commons · umpire: Rules:\n    - one\n    " + "z" * 400 + "\n")


def test_archive_writes_the_folder(tmp_path):
    build()
    out = run("pit_archive", REALM, "-o", str(tmp_path / "out"))
    folder = tmp_path / "out" / REALM
    assert out.strip() == str(folder)
    assert "message 24" in (folder / "transcript.txt").read_text()
    assert (folder / "report.md").read_text().startswith("# CLI — final report")
    assert (folder / "manifest.json").exists()


def test_stop_sets_the_rows_flag():
    build()
    out = run("pit_stop", REALM)
    assert "stop requested" in out
    assert Realm.objects.get(realm_id=REALM).stop_requested
