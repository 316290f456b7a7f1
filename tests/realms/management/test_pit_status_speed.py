"""``pit_status`` answers fast: it imports neither the servers nor Celery nor the API's views
(``bench/cli.py`` gives the real figures; the limit here leaves room for a busy machine)."""

from __future__ import annotations

import time

import pytest

from tests.realms.management.ranrealm import RanRealm

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

LIMIT_S = 2.0


def test_pit_status_of_a_realm_that_ran_takes_under_two_seconds(toolcheck_realm: RanRealm) -> None:
    ran = toolcheck_realm
    took = []
    for _ in range(3):
        began = time.monotonic()
        done = ran.manage("pit_status", ran.realm_id)
        took.append(time.monotonic() - began)
        assert done.returncode == 0, done.stderr
    assert min(took) < LIMIT_S, took
    lines = done.stdout.splitlines()
    assert lines[:3] == [
        f"realm:    {ran.realm_id}",
        "state:    archived (not active)",
        "outcome:  ping wins the relay",
    ]
    assert lines[3].startswith("events:   ") and int(lines[3].split()[-1]) > 0
    assert lines[4] == "messages: 9"
    assert lines[5] == "spend:"
    agents = [line.split(":")[0].strip() for line in lines[6:10]]
    assert agents == ["ping", "pong", "umpire", "total"], lines
    # toolcheck is played as written: no integrity finding.
    assert not any(line.startswith("integrity:") for line in lines), lines
