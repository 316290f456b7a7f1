"""Running the realm commands in-process on a realm with a chronicle."""

from __future__ import annotations

from io import StringIO

from django.core.management import call_command

from chronicle.kinds import Kind
from realms.models import Realm
from tests.chronicle.realmkit import event, running, say
from tests.fixtures.realms import build_realm

REALM = "cli-abc123"


def run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def build() -> None:
    build_realm(REALM, state=Realm.State.RUNNING, name="CLI")
    running(REALM, ts=1_000)
    for i in range(25):
        say(REALM, f"message {i}", 2_000 + i, agent="alice" if i % 2 else "bob")
    event(REALM, Kind.SPEND, {"agent": "alice", "usd": 0.0123}, 3_000)
    event(REALM, Kind.SPEND, {"agent": "bob", "usd": 0.5}, 3_001)
