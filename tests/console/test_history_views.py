"""The history page through Django's test client: runs with their outcome, spend and
state, the filters (an unknown value refused beside its field), the report and archived
transcript, and reruns through the API's queue with every refusal changing nothing."""

from __future__ import annotations

import pytest

from chronicle.kinds import Kind
from realms.forge.layout import archive_dir
from realms.models import Realm
from tests.chronicle.realmkit import event
from tests.fixtures.realms import build_realm

pytestmark = [pytest.mark.timeout(120), pytest.mark.django_db]


@pytest.fixture(autouse=True)
def _home(settings, tmp_path):
    settings.BEARPIT_HOME = tmp_path / "home"


@pytest.fixture
def runs() -> None:
    build_realm("a-abc123", name="Alpha", state=Realm.State.ARCHIVED)
    event("a-abc123", Kind.VERDICT, {"outcome": "alice wins"}, 2_000)
    event("a-abc123", Kind.SPEND, {"agent": "alice", "usd": 0.5}, 2_100)
    build_realm("b-abc123", name="Beta", state=Realm.State.ARCHIVED)
    event("b-abc123", Kind.VERDICT, {"outcome": "draw"}, 2_000)
    build_realm("c-abc123", name="Alpha", state=Realm.State.RUNNING)


def realm_ids(page: str) -> list[str]:
    return [r for r in ("a-abc123", "b-abc123", "c-abc123") if f">{r}</a>" in page]


def test_a_browser_without_the_operator_session_sees_no_page(client, runs):
    for url in ("/history/", "/history/a-abc123/report", "/history/a-abc123/transcript"):
        assert client.get(url).status_code == 403, url
    assert client.post("/history/a-abc123/rerun", {"mode": "snapshot"}).status_code == 403
    assert Realm.objects.count() == 3


def test_every_run_is_listed_with_outcome_spend_and_state(operator, runs):
    page = operator.get("/history/").content.decode()
    assert realm_ids(page) == ["a-abc123", "b-abc123", "c-abc123"]
    assert "alice wins" in page and "draw" in page and "$0.5000" in page
    assert 'class="badge state-running"' in page


def test_filters_narrow_the_runs(operator, runs):
    alpha = operator.get("/history/", {"scenario": "Alpha"}).content.decode()
    assert realm_ids(alpha) == ["a-abc123", "c-abc123"]
    won = operator.get("/history/", {"outcome": "alice wins"}).content.decode()
    assert realm_ids(won) == ["a-abc123"]
    running = operator.get("/history/", {"scenario": "Alpha", "state": "running"})
    assert realm_ids(running.content.decode()) == ["c-abc123"]
    none = operator.get("/history/", {"scenario": "Beta", "state": "running"}).content.decode()
    assert realm_ids(none) == [] and "No run matches these filters" in none


def test_htmx_gets_the_table_alone(operator, runs):
    response = operator.get("/history/", {"scenario": "Beta"}, HTTP_HX_REQUEST="true")
    page = response.content.decode()
    assert realm_ids(page) == ["b-abc123"]
    assert "<html" not in page and "<table" in page


def test_an_unknown_filter_value_is_refused_beside_its_field(operator, runs):
    response = operator.get("/history/", {"state": "exploded"})
    assert response.status_code == 400
    page = response.content.decode()
    assert 'id="state-error"' in page and "exploded" in page
    assert realm_ids(page) == []


def test_the_report_and_the_archived_transcript(operator, runs):
    report = operator.get("/history/a-abc123/report").content.decode()
    assert "alice wins" in report
    missing = operator.get("/history/a-abc123/transcript")
    assert missing.status_code == 404
    assert "written when the realm concludes" in missing.content.decode()
    folder = archive_dir("a-abc123")
    folder.mkdir(parents=True)
    (folder / "transcript.txt").write_text("<script>alert(1)</script> hello\n")
    assert 'href="/history/a-abc123/transcript"' in operator.get("/history/").content.decode()
    response = operator.get("/history/a-abc123/transcript")
    assert response.status_code == 200
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response.content.startswith(b"<script>alert(1)</script> hello")
    assert operator.get("/history/nobody-000000/report").status_code == 404
    assert operator.get("/history/NOT%20AN%20ID/transcript").status_code == 404


def test_rerun_snapshot_queues_a_new_realm_and_opens_it(
    operator, runs, local_worker, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = operator.post("/history/a-abc123/rerun", {"mode": "snapshot"})
    assert response.status_code == 302
    new = Realm.objects.exclude(realm_id__in=["a-abc123", "b-abc123", "c-abc123"]).get()
    assert response["Location"] == f"/realms/{new.realm_id}/"
    assert new.project == Realm.objects.get(realm_id="a-abc123").project
    assert local_worker.get_nowait() == new.realm_id


def test_rerun_latest_reloads_the_package(operator, runs, local_worker):
    response = operator.post("/history/b-abc123/rerun", {"mode": "latest"})
    assert response.status_code == 302
    assert Realm.objects.count() == 4


def test_rerun_refusals_change_nothing(operator, runs, settings, local_worker):
    bad = operator.post("/history/a-abc123/rerun", {"mode": "newest"})
    assert bad.status_code == 400 and "expected snapshot or latest" in bad.content.decode()
    assert operator.post("/history/nobody-000000/rerun", {"mode": "snapshot"}).status_code == 404
    assert operator.get("/history/a-abc123/rerun").status_code == 405
    settings.BEARPIT_MAX_ACTIVE_REALMS = 1
    full = operator.post("/history/a-abc123/rerun", {"mode": "snapshot"})
    assert full.status_code == 429
    assert "a-abc123 was not rerun" in full.content.decode()
    assert Realm.objects.count() == 3 and local_worker.empty()


def test_rerun_without_a_worker_says_why(operator, runs):
    response = operator.post("/history/a-abc123/rerun", {"mode": "snapshot"})
    assert response.status_code == 503 and "no Celery broker" in response.content.decode()
    assert Realm.objects.count() == 3


def test_rerun_of_a_package_with_open_egress_asks_consent_first(operator, local_worker):
    build_realm(
        "open-abc123",
        state=Realm.State.ARCHIVED,
        spec={"environment": {"network_egress": "open"}},
    )
    asked = operator.post("/history/open-abc123/rerun", {"mode": "snapshot"})
    assert asked.status_code == 400
    page = asked.content.decode()
    assert "network_egress: open" in page and 'name="allow_elevated_tools"' in page
    assert Realm.objects.count() == 1 and local_worker.empty()
    consented = operator.post(
        "/history/open-abc123/rerun", {"mode": "snapshot", "allow_elevated_tools": "on"}
    )
    assert consented.status_code == 302
    assert Realm.objects.count() == 2
