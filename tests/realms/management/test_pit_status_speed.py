"""``pit_status`` answers fast: it imports neither the servers nor Celery nor the API's views
(``bench/cli.py`` gives the real figures). The limit is on the CPU the command spends, which a
busy machine does not stretch as it stretches wall time, and it is measured against setting
Django up alone, in the same run, so a slower machine moves both."""

from __future__ import annotations

import resource
import subprocess
import sys

import pytest

from tests.conftest import REPO
from tests.realms.management.ranrealm import RanRealm

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

# pit_status costs 1.6 to 2.6 times a bare django.setup() (more on a loaded machine); with the
# servers' and the API's imports it cost about 4.7 times.
CPU_RATIO_LIMIT = 3.5
DJANGO_SETUP = "import django; django.setup()"


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def test_pit_status_of_a_realm_that_ran_spends_little_cpu(toolcheck_realm: RanRealm) -> None:
    ran = toolcheck_realm
    took = []
    for _ in range(3):
        began = _children_cpu_s()
        done = ran.manage("pit_status", ran.realm_id)
        took.append(_children_cpu_s() - began)
        assert done.returncode == 0, done.stderr
    reference = []
    for _ in range(3):
        began = _children_cpu_s()
        subprocess.run(
            [sys.executable, "-c", DJANGO_SETUP], cwd=REPO, env=ran.env, check=True, timeout=60
        )
        reference.append(_children_cpu_s() - began)
    assert min(took) < CPU_RATIO_LIMIT * min(reference), (took, reference)
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
