"""``manage.py pit_tail REALM``: the last messages, one line each or in full."""

from __future__ import annotations

import re

import pytest
from django.core.management import CommandError

from chronicle.models import now_ms
from realms.models import Realm
from tests.chronicle.realmkit import running, say
from tests.fixtures.realms import build_realm

from .cli import REALM, build, run

pytestmark = [pytest.mark.timeout(30), pytest.mark.django_db, pytest.mark.usefixtures("cli_home")]


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
    build_realm(REALM, state=Realm.State.RUNNING)
    running(REALM, ts=now_ms())
    say(REALM, "Rules:\n- one\n" + "z" * 400, now_ms(), agent="umpire")
    short = run("pit_tail", REALM).splitlines()
    assert len(short) == 1
    assert re.fullmatch(r"\[\d\d:\d\d:\d\d\] commons · umpire: Rules: - one z+…", short[0])
    full = run("pit_tail", REALM, "--full")
    assert full.endswith(" commons · umpire: Rules:\n    - one\n    " + "z" * 400 + "\n")
