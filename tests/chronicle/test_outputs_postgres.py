"""The Chronicle's read-outs and the Warden's decisions on PostgreSQL (production shape).

The selectors filter on JSON payload keys; this runs them, the budget policy, nudges,
termination, the report, the status document and the archive in a process whose
default database is a fresh PostgreSQL database.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fixtures.postgres import last_line_of, migrated_env

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(240)]


SCRIPT = """
import json
import django
django.setup()
from chronicle.archive import archive_realm
from chronicle.models import Event, Message
from chronicle.report import render_report
from realms.api.status import realm_status
from realms.warden import budget, nudges, termination
from realms.warden.snapshot import build_snapshot
from tests.fixtures.realms import build_realm

R = "pg-abc123"
build_realm(R, name="PG Realm", state="running",
            agents=[{"id": "alice", "budget": 1, "on_exhausted": "kill"}, {"id": "bob"}])
def ev(kind, payload, ts):
    Event.objects.create(realm_id=R, kind=kind, payload=payload, ts_ms=ts)
ev("lifecycle", {"event": "running", "commons_room": "!c:x", "side_channels": {}}, 1000)
ev("spend", {"agent": "alice", "usd": 1.5, "tokens_in": 3, "tokens_out": 4}, 1100)
ev("score", {"agent": "bob", "delta": 2}, 1200)
ev("violation", {"agent": "alice", "reason": "overspent"}, 1300)
Message.objects.create(realm_id=R, channel="!c:x", sender="@a:x", sender_agent="alice",
                       body="DONE here", ts_ms=1400, matrix_event_id="$pg1")
stopped = []
first = budget.enforce_budgets(build_snapshot(R, now_ms=2000), stop_agent=stopped.append)
second = budget.enforce_budgets(build_snapshot(R, now_ms=3000), stop_agent=stopped.append)
posts = []
nudge = nudges.nudge_if_stalled(build_snapshot(R, now_ms=1400 + 151000),
                                post=lambda t, m: posts.append(m))
again = nudges.nudge_if_stalled(build_snapshot(R, now_ms=1400 + 152000),
                                post=lambda t, m: posts.append(m))
found = termination.evaluate(build_snapshot(R, now_ms=5000),
                             [{"type": "message", "pattern": "DONE"}], verdict_ends_realm=False)
status = realm_status(R)
folder = archive_realm(R)
print(json.dumps({
    "first": [a.action for a in first], "second": [a.action for a in second],
    "stopped": stopped, "posts": posts, "again": again is None,
    "conclusion": found.as_dict() if found else None,
    "report": render_report(R),
    "spend": status["spend"], "scores": status["scores"], "state": status["state"],
    "archived": sorted(p.name for p in folder.iterdir()),
}))
"""


@pytest.fixture
def pg_env(tmp_path: Path) -> Iterator[dict[str, str]]:
    with migrated_env(tmp_path / "home", "chronicle") as env:
        yield env


def test_outputs_and_decisions_on_postgres(pg_env: dict[str, str]) -> None:
    out = json.loads(last_line_of(SCRIPT, pg_env))
    assert out["first"] == ["exhausted", "killed"]
    assert out["second"] == []
    assert out["stopped"] == ["alice"]
    assert out["posts"] == [["bob"]] and out["again"] is True
    assert out["conclusion"]["reason"] == "message"
    assert out["report"].startswith("# PG Realm — final report\n")
    assert "- bob: 2\n" in out["report"] and "- alice: overspent\n" in out["report"]
    assert "- alice: $1.5000\n" in out["report"]
    assert out["spend"] == {"alice": 1.5} and out["scores"] == {"bob": 2.0}
    assert out["state"] == "running"
    assert out["archived"] == [
        "events.jsonl",
        "logs",
        "manifest.json",
        "messages.jsonl",
        "outputs",
        "report.md",
        "transcript.txt",
    ]
