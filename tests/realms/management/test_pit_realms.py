"""``pit_realms``: one line per realm, newest first, with what each spent."""

from __future__ import annotations

import re
import subprocess

import pytest

from tests.realms.management.ranrealm import RanRealm

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

ROW = re.compile(r"^(\S+)\s+(\S+)\s+-\s+(\S+)\s+(\d{4}-\d\d-\d\d \d\d:\d\d)\s+\$(\d+\.\d{4})$")


def out(done: subprocess.CompletedProcess[str]) -> list[str]:
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def total_spend(ran: RanRealm) -> str:
    status = out(ran.manage("pit_status", ran.realm_id))
    (total,) = [line for line in status if line.startswith("  total: $")]
    return total.removeprefix("  total: $")


def test_the_realm_that_ran_and_a_newer_one(toolcheck_realm: RanRealm) -> None:
    ran = toolcheck_realm
    listed = out(ran.manage("pit_realms"))
    assert listed[0].split() == ["REALM", "STATE", "HOST", "PACKAGE", "STARTED", "SPEND"]
    (row,) = listed[1:]
    match = ROW.match(row)
    assert match, listed
    assert match.group(1, 2, 3) == (ran.realm_id, "archived", "toolcheck")
    assert match.group(5) == total_spend(ran) and float(match.group(5)) > 0
    # The columns line up under the header.
    assert listed[0].index("STATE") == row.index("archived")

    newer = "later-abc123"
    made = ran.manage(
        "shell",
        "-c",
        "from realms.models import Realm; "
        f"Realm.objects.create(realm_id={newer!r}, package_name='duel')",
    )
    assert made.returncode == 0, made.stderr
    listed = out(ran.manage("pit_realms"))
    assert [line.split()[0] for line in listed[1:]] == [newer, ran.realm_id], listed
    first = ROW.match(listed[1])
    assert first and first.group(2, 3, 5) == ("pending", "duel", "0.0000"), listed
    one = out(ran.pit("realms", "-n", "1"))
    assert [line.split() for line in one] == [line.split() for line in listed[:2]]


def test_a_bad_limit_is_one_line(toolcheck_realm: RanRealm) -> None:
    done = toolcheck_realm.manage("pit_realms", "-n", "0")
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.strip() == "CommandError: --limit: expected a positive number; got 0"
