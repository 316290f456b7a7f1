"""Worker hosts in one process: the router, the dead-host check and the host listing.
(Placement raced between processes is tests/deploy/test_placement_race.py; hosts as OS
processes are tests/deploy/test_hosts.py.)"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from chronicle.kinds import Kind
from chronicle.models import Event
from realms.hosts.dead import check_hosts
from realms.hosts.listing import host_rows
from realms.hosts.placement import Claim, claim_realm
from realms.hosts.routing import route
from realms.models import Host, Realm
from tests.fixtures.realms import build_realm

pytestmark = pytest.mark.django_db

ROSTER = [{"id": "ping"}, {"id": "umpire", "role": "referee"}]


def host(host_id: str, *, silent_s: float = 0, capacity: int = 1, state: str = "up") -> Host:
    now = timezone.now()
    return Host.objects.create(
        host_id=host_id, capacity=capacity, backend="process", state=state,
        last_heartbeat=now - timedelta(seconds=silent_s), started_at=now,
    )  # fmt: skip


def test_ticks_and_teardowns_go_to_the_realms_host_and_the_rest_to_the_shared_queue():
    alpha = host("alpha")
    build_realm("on-alpha", name="h", agents=ROSTER, state="running", host=alpha)
    build_realm("nowhere", name="h", agents=ROSTER, state="running")
    assert route("warden.tick", ["on-alpha"], {}, {}) == {"queue": "host.alpha"}
    assert route("warden.conclude", ["on-alpha"], {}, {}) == {"queue": "host.alpha"}
    assert route("warden.tick", ["nowhere"], {}, {}) is None
    assert route("realms.provision", ["on-alpha"], {}, {}) is None
    assert route("hosts.check", [], {}, {}) is None


def test_a_full_or_dead_host_takes_no_realm():
    alpha = host("alpha", capacity=1)
    build_realm("held", name="h", agents=ROSTER, state="running", host=alpha)
    build_realm("waiting", name="h", agents=ROSTER, state="pending")
    assert claim_realm("waiting", "alpha") is Claim.FULL
    host("gone", capacity=5, state="dead")
    assert claim_realm("waiting", "gone") is Claim.FULL
    host("beta", capacity=1)
    assert claim_realm("waiting", "beta") is Claim.PLACED
    assert claim_realm("waiting", "alpha") is Claim.FULL
    Realm.objects.filter(realm_id="held").update(state="archived")
    assert claim_realm("waiting", "alpha") is Claim.TAKEN
    assert Realm.objects.get(realm_id="waiting").host_id == "beta"


def test_a_silent_host_is_dead_once_and_its_live_realms_interrupted(settings):
    settings.BEARPIT_HOST_DEAD_AFTER = 5
    quiet, fresh, me = (
        host("quiet", silent_s=30),
        host("fresh", silent_s=1),
        host("me", silent_s=30),
    )
    build_realm("lost", name="h", agents=ROSTER, state="running", host=quiet)
    build_realm("waiting-on-it", name="h", agents=ROSTER, state="pending", host=quiet)
    build_realm("done", name="h", agents=ROSTER, state="archived", host=quiet)
    build_realm("fine", name="h", agents=ROSTER, state="running", host=fresh)
    build_realm("mine", name="h", agents=ROSTER, state="running", host=me)

    first = check_hosts(me="me")
    assert first == {"dead": ["quiet"], "interrupted": {"lost": "quiet", "waiting-on-it": "quiet"}}
    assert check_hosts(me="me") == {"dead": [], "interrupted": {}}
    states = dict(Realm.objects.values_list("realm_id", "state"))
    assert states == {"lost": "interrupted", "waiting-on-it": "interrupted", "done": "archived",
                      "fine": "running", "mine": "running"}  # fmt: skip
    lost = Realm.objects.get(realm_id="lost")
    assert lost.conclusion_detail.startswith("worker host quiet stopped answering")
    ended = Event.objects.filter(realm_id="lost", kind=Kind.LIFECYCLE).values_list(
        "payload__event", flat=True
    )
    assert list(ended)[-2:] == ["concluding", "interrupted"]
    # The survivor ran only the shared steps: nothing of the dead host's sandboxes.
    steps = Event.objects.filter(realm_id="lost", payload__event="teardown_error")
    assert not steps.filter(payload__step__in=["stop sandboxes", "release sandboxes"]).exists()
    rows = {r["host_id"]: r for r in host_rows()}
    assert (rows["quiet"]["state"], rows["quiet"]["load"], rows["quiet"]["realms"]) == (
        "dead",
        0,
        [],
    )
    assert (rows["fresh"]["load"], rows["fresh"]["realms"]) == (1, ["fine"])


def test_the_consoles_active_realms_show_their_host(operator, settings, tmp_path):
    settings.BEARPIT_HOME = tmp_path / "home"
    build_realm("far-abc123", name="h", agents=ROSTER, state="running", host=host("alpha"))
    build_realm("near-abc123", name="h", agents=ROSTER, state="running")
    live = operator.get("/home/live").content.decode()
    active = live.split('id="recent-h"')[0]
    assert '<th scope="col">Host</th>' in active
    far, near = active.split("far-abc123", 1)[1], active.split("near-abc123", 1)[1]
    assert far.split("</tr>")[0].count("<td>alpha</td>") == 1
    assert near.split("</tr>")[0].count("<td>—</td>") == 1


def test_pit_realms_lists_the_hosts_with_load_and_heartbeat_age():
    from io import StringIO

    from django.core.management import call_command

    out = StringIO()
    call_command("pit_realms", "--hosts", stdout=out)
    assert out.getvalue().strip() == (
        "(no worker hosts: the realms run in this installation's process)"
    )
    alpha = host("alpha", capacity=3, silent_s=4)
    build_realm("on-alpha", name="h", agents=ROSTER, state="running", host=alpha)
    host("beta", state="dead", silent_s=90)
    out = StringIO()
    call_command("pit_realms", "--hosts", stdout=out)
    lines = [line.split() for line in out.getvalue().splitlines()]
    assert lines == [
        ["HOST", "STATE", "LOAD", "BACKEND", "HEARTBEAT", "REALMS"],
        ["alpha", "up", "1/3", "process", "4s", "ago", "on-alpha"],
        ["beta", "dead", "0/1", "process", "90s", "ago", "-"],
    ]
