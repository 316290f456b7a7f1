"""The home page through Django's test client: live counters, recent runs, capacity, the
first-run button and its refusals (no worker, at capacity), none of which starts a realm."""

from __future__ import annotations

import datetime as dt

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.utils import timezone

from chronicle.kinds import Kind
from realms.models import Realm
from tests.chronicle.realmkit import event
from tests.conftest import REPO
from tests.fixtures.realms import build_realm

pytestmark = [pytest.mark.timeout(120), pytest.mark.django_db]


@pytest.fixture(autouse=True)
def _home(settings, tmp_path):
    settings.BEARPIT_HOME = tmp_path / "home"
    settings.BEARPIT_EXAMPLES_DIR = REPO / "examples"


def test_a_browser_without_the_operator_session_sees_no_page(client):
    for url in ("/", "/home/live"):
        response = client.get(url)
        assert response.status_code == 403, url
    assert client.post("/home/launch-first-run").status_code == 403
    assert not Realm.objects.exists()


def test_an_empty_installation_says_what_to_do_first(operator):
    page = operator.get("/").content.decode()
    assert "Nothing has run here yet" in page
    assert "Launch toolcheck" in page
    assert "0</strong> of 6 realms active" in page


def test_live_realms_show_their_counters_and_ended_ones_their_outcome(operator, settings):
    settings.BEARPIT_MAX_ACTIVE_REALMS = 4
    build_realm(
        "live-abc123", name="Alpha", agents=[{"id": "alice"}, {"id": "bob"}], state="running"
    )
    event("live-abc123", Kind.SPEND, {"agent": "alice", "usd": 0.125}, 2_000)
    event("live-abc123", Kind.TURN, {"event": "turn", "round": 3, "current": "bob"}, 2_100)
    build_realm("done-abc123", name="Beta", state=Realm.State.ARCHIVED)
    event("done-abc123", Kind.VERDICT, {"outcome": "bob <b>wins</b>"}, 3_000)

    live = operator.get("/home/live").content.decode()
    active, recent = live.split('id="recent-h"')
    assert "live-abc123" in active and "done-abc123" not in active
    assert "$0.1250" in active and "2 / 2" in active
    assert '<td class="num">3</td>' in active  # the round
    assert "1</strong> of 4 realms active" in active
    # The referee's text is escaped, never markup.
    assert "done-abc123" in recent and "bob &lt;b&gt;wins&lt;/b&gt;" in recent
    assert "Nothing has run here yet" not in operator.get("/").content.decode()


def test_launch_without_a_worker_says_why_and_starts_nothing(operator):
    response = operator.post("/home/launch-first-run")
    assert response.status_code == 503
    page = response.content.decode()
    assert "toolcheck was not launched" in page and "no Celery broker" in page
    assert not Realm.objects.exists()


def test_launch_at_capacity_says_why_and_starts_nothing(operator, settings, local_worker):
    settings.BEARPIT_MAX_ACTIVE_REALMS = 1
    build_realm("busy-abc123", state=Realm.State.RUNNING)
    response = operator.post("/home/launch-first-run")
    assert response.status_code == 429
    assert "1 realms are already active" in response.content.decode()
    assert list(Realm.objects.values_list("realm_id", flat=True)) == ["busy-abc123"]
    assert local_worker.empty()


def test_launch_goes_to_the_new_realms_page(operator, local_worker):
    response = operator.post("/home/launch-first-run")
    assert response.status_code == 302
    (realm,) = Realm.objects.all()
    assert realm.package_name == "toolcheck" and realm.state == Realm.State.PENDING
    assert response["Location"] == f"/realms/{realm.realm_id}/"


def test_the_first_run_button_needs_a_post_with_the_csrf_token(operator):
    assert operator.get("/home/launch-first-run").status_code == 405
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(get_user_model().objects.get(username="operator"))
    assert strict.post("/home/launch-first-run").status_code == 403
    assert not Realm.objects.exists()


def test_a_realm_nothing_drives_any_more_is_a_run_not_a_live_realm(operator):
    stale = timezone.now() - dt.timedelta(hours=1)
    build_realm("gone-abc123", state=Realm.State.RUNNING, claimed_until=stale)
    event("gone-abc123", Kind.LIFECYCLE, {"event": "running"}, 1_000)
    live = operator.get("/home/live").content.decode()
    active, recent = live.split('id="recent-h"')
    assert "gone-abc123" not in active and "No realm is running" in active
    assert "gone-abc123" in recent and "interrupted" in recent
