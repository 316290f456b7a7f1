"""``pit reap --force``: a realm still marked running (its process gone) keeps its sandboxes
from a plain reap; ``--force`` counts it as gone too. Dry runs only: nothing is stopped."""

from __future__ import annotations

import pytest

from tests.realms.management.ranrealm import Home

pytestmark = [pytest.mark.timeout(120)]

REALM = "stale-abc123"

LEFT_RUNNING = (
    "from realms.models import Realm; from realms.forge.models import Sandbox; "
    f"Realm.objects.create(realm_id={REALM!r}, package_name='duel', state='running'); "
    f"Sandbox.objects.create(realm_id={REALM!r}, agent_id='alice', backend='bwrap', "
    "host_uid=60001, host_gid=60001, state='running')"
)


def test_force_counts_a_realm_marked_running_as_gone(fresh_home: Home) -> None:
    made = fresh_home.manage("shell", "-c", LEFT_RUNNING)
    assert made.returncode == 0, made.stderr

    plain = fresh_home.manage("pit_reap", "--dry-run")
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout.splitlines() == ["0 item(s) would remove"]

    forced = fresh_home.pit("reap", "--dry-run", "--force")
    assert forced.returncode == 0, forced.stderr
    assert forced.stdout.splitlines() == [
        f"would remove sandbox: realm={REALM} agent=alice",
        "1 item(s) would remove",
    ]


def test_an_unknown_flag_is_one_line(fresh_home: Home) -> None:
    done = fresh_home.manage("pit_reap", "--forse")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines()[-1].endswith("unrecognized arguments: --forse")
