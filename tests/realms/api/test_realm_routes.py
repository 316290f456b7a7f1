"""Stop, rerun, outputs, runs and launch consent through the realm routes."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from pathlib import Path

import pytest
from django.utils import timezone

from chronicle.kinds import Kind
from chronicle.models import Event
from realms.library import services as library
from realms.models import Realm
from tests.chronicle.realmkit import event
from tests.fixtures.realms import build_realm, write_package

from .conftest import check_answer, drained

pytestmark = [pytest.mark.timeout(60), pytest.mark.django_db]


# --- stop -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "state", [Realm.State.ARCHIVED, Realm.State.FAILED, Realm.State.CONCLUDING]
)
def test_stop_of_a_realm_that_ended_is_a_409_not_a_false_success(routes_api, state):
    build_realm("over-abc123", state=state)
    response = routes_api.post("/api/realms/over-abc123/stop")
    assert response.status_code == 409, response.content
    assert state in response.json()["error"]
    assert not Realm.objects.get(realm_id="over-abc123").stop_requested


def test_stop_of_a_live_realm_is_accepted(routes_api):
    build_realm("live-abc123", state=Realm.State.PROVISIONING)
    response = routes_api.post("/api/realms/live-abc123/stop")
    assert response.status_code == 202
    assert response.json() == {"realm_id": "live-abc123", "stop_requested": True}
    assert Realm.objects.get(realm_id="live-abc123").stop_requested


def test_stop_of_a_realm_known_only_to_the_chronicle_is_a_409(routes_api):
    event("ghost-abc123", Kind.LIFECYCLE, {"event": "archived"}, 1_000)
    response = routes_api.post("/api/realms/ghost-abc123/stop")
    assert response.status_code == 409 and "ended" in response.json()["error"]


# --- launch: worker, consent, strict bodies ---------------------------------------


def _open_egress_package(root: Path) -> None:
    write_package(
        root,
        name="Open Net",
        agents=[{"id": "solo"}],
        spec={"environment": {"network_egress": "open"}},
    )
    library.import_folder(root)


def test_without_any_worker_a_launch_is_503_and_changes_nothing(routes_api, tmp_path):
    _open_egress_package(tmp_path / "open-net")
    response = routes_api.post("/api/realms", {"package": "open-net", "allow_elevated_tools": True})
    assert response.status_code == 503
    assert "pit_serve" in response.json()["error"]
    assert not Realm.objects.exists()


def test_a_local_worker_gets_the_launched_realm_once_it_commits(
    routes_api, local_worker, tmp_path, django_capture_on_commit_callbacks
):
    _open_egress_package(tmp_path / "open-net")
    with django_capture_on_commit_callbacks(execute=True):
        response = routes_api.post(
            "/api/realms",
            {"package": "open-net", "realm_id": "net-abc123", "allow_elevated_tools": True},
        )
    assert response.status_code == 202, response.content
    assert response.json() == {"realm_id": "net-abc123", "state": "starting"}
    assert drained(local_worker) == ["net-abc123"]
    assert Realm.objects.get(realm_id="net-abc123").state == Realm.State.PENDING


def test_elevated_grants_need_consent_and_a_refusal_changes_nothing(
    routes_api, local_worker, tmp_path, django_capture_on_commit_callbacks
):
    _open_egress_package(tmp_path / "open-net")
    events_before = Event.objects.count()
    with django_capture_on_commit_callbacks(execute=True):
        response = routes_api.post("/api/realms", {"package": "open-net", "realm_id": "net-x1"})
    assert response.status_code == 400, response.content
    body = response.json()
    assert body["elevated"] == ["network_egress: open"]
    assert "allow_elevated_tools" in body and "network_egress: open" in body["problems"][0]
    assert not Realm.objects.exists()
    assert Event.objects.count() == events_before
    assert drained(local_worker) == []


def test_a_plain_package_needs_no_consent(routes_api, local_worker, tmp_path):
    write_package(tmp_path / "plain", name="Plain", agents=[{"id": "solo"}])
    library.import_folder(tmp_path / "plain")
    assert routes_api.post("/api/realms", {"package": "plain"}).status_code == 202


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"package": "plain", "allow_elevated_tools": "yes"}, "allow_elevated_tools"),
        ({"package": "plain", "realm_id": 7}, "realm_id"),
        ({"package": "plain", "parameters": {"a": None}}, "parameters.a"),
        ({"package": "plain", "parameters": {"a": [1]}}, "parameters.a"),
        ({"package": "plain", "turns": "fast"}, "turns"),
        ({"package": "plain", "extra": 1}, "extra"),
        ({}, "package"),
        ({"package": ""}, "package"),
    ],
)
def test_launch_body_problems_are_located(routes_api, local_worker, body, field):
    response = routes_api.post("/api/realms", body)
    assert response.status_code == 400, response.content
    assert field in response.json(), response.json()
    assert isinstance(response.json()[field], str) and response.json()[field]
    assert not Realm.objects.exists()


def test_a_body_that_is_not_an_object_is_refused(routes_api):
    response = routes_api.post("/api/realms", ["toolcheck"])
    assert response.status_code == 400 and "body" in response.json()


def test_unknown_or_repeated_query_parameters_are_named(routes_api):
    build_realm("q-abc123", state=Realm.State.RUNNING)
    unknown = routes_api.get("/api/realms/q-abc123/events?knd=spend")
    assert unknown.status_code == 400 and unknown.json() == {"knd": "unknown field"}
    twice = routes_api.get("/api/realms/q-abc123/events?limit=1&limit=2")
    assert twice.status_code == 400 and "limit" in twice.json()
    assert routes_api.get("/api/realms?x=1").status_code == 400


# --- rerun ----------------------------------------------------------------------


def test_rerun_replays_the_snapshot_for_the_local_worker(
    routes_api, local_worker, django_capture_on_commit_callbacks
):
    old = build_realm("first-abc123", state=Realm.State.ARCHIVED)
    with django_capture_on_commit_callbacks(execute=True):
        response = routes_api.post("/api/realms/first-abc123/rerun?mode=snapshot&as=again-abc123")
    assert response.status_code == 202, response.content
    assert response.json() == {
        "realm_id": "again-abc123",
        "state": "starting",
        "mode": "snapshot",
        "rerun_of": "first-abc123",
    }
    again = Realm.objects.get(realm_id="again-abc123")
    assert again.state == Realm.State.PENDING and again.project == old.project
    assert drained(local_worker) == ["again-abc123"]

    taken = routes_api.post("/api/realms/first-abc123/rerun?as=again-abc123")
    assert taken.status_code == 409


def test_rerun_latest_reloads_the_package(routes_api, local_worker):
    build_realm("first-abc123", state=Realm.State.ARCHIVED)
    response = routes_api.post("/api/realms/first-abc123/rerun?mode=latest")
    assert response.status_code == 202, response.content
    assert response.json()["mode"] == "latest"
    assert Realm.objects.count() == 2


def test_rerun_latest_takes_the_librarys_current_copy_and_snapshot_the_old_one(
    routes_api, local_worker, tmp_path
):
    root = tmp_path / "evolving"
    write_package(root, name="Evolving", agents=[{"id": "solo"}], spec={"goals": ["First."]})
    library.import_folder(root)
    assert (
        routes_api.post("/api/realms", {"package": "evolving", "realm_id": "ev-1"}).status_code
        == 202
    )
    write_package(root, name="Evolving", agents=[{"id": "solo"}], spec={"goals": ["Second."]})
    library.import_folder(root)

    latest = routes_api.post("/api/realms/ev-1/rerun?mode=latest&as=ev-latest")
    snapshot = routes_api.post("/api/realms/ev-1/rerun?mode=snapshot&as=ev-snapshot")
    assert latest.status_code == snapshot.status_code == 202
    goals = {r.realm_id: r.project["spec"]["goals"] for r in Realm.objects.all()}
    assert goals == {"ev-1": ["First."], "ev-latest": ["Second."], "ev-snapshot": ["First."]}


def test_rerun_refusals(routes_api, settings):
    build_realm("first-abc123", state=Realm.State.ARCHIVED)
    no_worker = routes_api.post("/api/realms/first-abc123/rerun")
    assert no_worker.status_code == 503
    bad = routes_api.post("/api/realms/first-abc123/rerun?mode=newest")
    assert bad.status_code == 400 and "newest" in bad.json()["mode"]
    flag = routes_api.post("/api/realms/first-abc123/rerun?allow_provider_fallback=maybe")
    assert flag.status_code == 400 and "allow_provider_fallback" in flag.json()
    assert routes_api.post("/api/realms/nobody-000000/rerun").status_code == 404
    assert Realm.objects.count() == 1


def test_rerun_at_capacity_is_429(routes_api, local_worker, settings):
    settings.BEARPIT_MAX_ACTIVE_REALMS = 1
    build_realm("first-abc123", state=Realm.State.RUNNING)
    response = routes_api.post("/api/realms/first-abc123/rerun")
    assert response.status_code == 429 and "1 realms" in response.json()["error"]
    assert Realm.objects.count() == 1


def test_rerun_of_an_open_egress_realm_needs_consent_again(routes_api, local_worker, tmp_path):
    root = tmp_path / "open-net"
    _open_egress_package(root)
    with_consent = {"package": "open-net", "realm_id": "net-abc123", "allow_elevated_tools": True}
    assert routes_api.post("/api/realms", with_consent).status_code == 202
    refused = routes_api.post("/api/realms/net-abc123/rerun")
    assert refused.status_code == 400 and refused.json()["elevated"] == ["network_egress: open"]
    assert Realm.objects.count() == 1
    ok = routes_api.post("/api/realms/net-abc123/rerun?allow_elevated_tools=true")
    assert ok.status_code == 202


# --- outputs --------------------------------------------------------------------


def _outputs(tmp_path: Path, realm_id: str) -> Path:
    root = tmp_path / "realms" / realm_id / "archive" / "outputs"
    (root / "sections").mkdir(parents=True)
    (root / "design.md").write_text("# design\n")
    (root / "sections" / "one.md").write_text("<script>alert(1)</script>")
    outside = tmp_path / "secret.txt"
    outside.write_text("the host's secret")
    (root / "leak.txt").symlink_to(outside)
    (root / "up").symlink_to(tmp_path)
    return root


def test_outputs_are_listed_with_size_digest_and_url(routes_api, tmp_path, openapi):
    build_realm("out-abc123", state=Realm.State.ARCHIVED)
    _outputs(tmp_path, "out-abc123")
    body = routes_api.get("/api/realms/out-abc123/outputs").json()
    check_answer(openapi, "/api/realms/{realm_id}/outputs", "get", 200, body)
    assert body["realm_id"] == "out-abc123"
    assert body["outputs"] == [
        {
            "name": "design.md",
            "size": 9,
            "sha256": hashlib.sha256(b"# design\n").hexdigest(),
            "url": "/api/realms/out-abc123/outputs/design.md",
        },
        {
            "name": "sections/one.md",
            "size": 25,
            "sha256": hashlib.sha256(b"<script>alert(1)</script>").hexdigest(),
            "url": "/api/realms/out-abc123/outputs/sections/one.md",
        },
    ]


def test_an_output_downloads_as_an_attachment_never_sniffed(routes_api, tmp_path):
    build_realm("out-abc123", state=Realm.State.ARCHIVED)
    _outputs(tmp_path, "out-abc123")
    response = routes_api.get("/api/realms/out-abc123/outputs/sections/one.md")
    assert response.status_code == 200
    assert b"".join(response.streaming_content) == b"<script>alert(1)</script>"
    assert response["Content-Type"] == "application/octet-stream"
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Content-Disposition"].startswith("attachment;")
    assert "one.md" in response["Content-Disposition"]


@pytest.mark.parametrize(
    ("name", "status"),
    [
        ("leak.txt", 404),
        ("up/secret.txt", 404),
        ("../../../../secret.txt", 400),
        ("sections/../design.md", 400),
        ("/etc/passwd", 400),
        ("missing.md", 404),
        ("sections", 404),
    ],
)
def test_an_output_path_never_leaves_the_outputs_folder(routes_api, tmp_path, name, status):
    build_realm("out-abc123", state=Realm.State.ARCHIVED)
    _outputs(tmp_path, "out-abc123")
    response = routes_api.get(f"/api/realms/out-abc123/outputs/{name}")
    assert response.status_code == status, (name, response.content)
    assert b"the host's secret" not in b"".join(getattr(response, "streaming_content", [b""]))
    assert response.json()


def test_a_realm_with_no_archive_has_no_outputs(routes_api):
    build_realm("new-abc123", state=Realm.State.RUNNING)
    assert routes_api.get("/api/realms/new-abc123/outputs").json()["outputs"] == []
    assert routes_api.get("/api/realms/nobody-000000/outputs").status_code == 404


# --- runs -----------------------------------------------------------------------


def test_runs_newest_first_with_outcome_spend_and_duration(routes_api):
    build_realm("a-abc123", name="Alpha", state=Realm.State.ARCHIVED)
    build_realm("b-abc123", name="Beta", state=Realm.State.RUNNING)
    build_realm("c-abc123", name="Alpha", state=Realm.State.RUNNING)
    event("a-abc123", Kind.VERDICT, {"outcome": "alice"}, 2_000)
    for usd in (0.25, 0.5):
        event("c-abc123", Kind.SPEND, {"agent": "alice", "usd": usd}, 2_100)
    body = routes_api.get("/api/runs").json()
    assert [r["realm_id"] for r in body["runs"]] == ["c-abc123", "b-abc123", "a-abc123"]
    first = body["runs"][0]
    assert set(first) == {
        "realm_id",
        "scenario",
        "state",
        "outcome",
        "spend",
        "duration_s",
        "updated",
        "active",
    }
    assert first["scenario"] == "Alpha" and first["spend"] == 0.75 and first["active"] is True
    assert first["state"] == "running" and first["duration_s"] >= 0
    assert body["runs"][2]["outcome"] == "alice"
    assert body["active"] == 2 and body["capacity"] >= 1

    lapsed = timezone.now() - dt.timedelta(hours=1)  # the worker that held it is gone
    build_realm("d-abc123", name="Gamma", state=Realm.State.RUNNING, claimed_until=lapsed)
    body = routes_api.get("/api/runs").json()
    assert body["runs"][0]["realm_id"] == "d-abc123"
    assert body["runs"][0]["active"] is False
    assert body["active"] == 2

    alpha = routes_api.get("/api/runs?scenario=Alpha&limit=1").json()["runs"]
    assert [r["realm_id"] for r in alpha] == ["c-abc123"]
    assert routes_api.get("/api/runs?limit=0").status_code == 400
    assert "limit" in routes_api.get("/api/runs?limit=many").json()


def test_new_routes_refuse_anonymous_callers(client):
    build_realm("anon-abc123", state=Realm.State.ARCHIVED)
    for path in (
        "/api/runs",
        "/api/realms/anon-abc123/outputs",
        "/api/realms/anon-abc123/outputs/a.txt",
        "/api/realms/anon-abc123/machine?as=alice",
    ):
        assert client.get(path).status_code == 401, path
    assert client.post("/api/realms/anon-abc123/rerun").status_code == 401
    assert Realm.objects.count() == 1


def test_the_realm_list_keeps_its_shape(routes_api):
    build_realm("l-abc123", state=Realm.State.RUNNING)
    body = routes_api.get("/api/realms").json()
    assert set(body) == {"realms", "active", "capacity"}
    assert body["realms"] == [
        {"realm_id": "l-abc123", "state": "running", "active": True, "host": None}
    ]
    assert json.dumps(body)


def test_the_realm_list_and_the_hosts_show_which_host_runs_what(routes_api, client):
    from realms.models import Host

    now = timezone.now()
    alpha = Host.objects.create(host_id="alpha", capacity=2, backend="bwrap", state="up",
                                last_heartbeat=now, started_at=now)  # fmt: skip
    build_realm("placed-abc123", state=Realm.State.RUNNING, host=alpha)
    build_realm("old-abc123", state=Realm.State.ARCHIVED, host=alpha)
    listed = {r["realm_id"]: r["host"] for r in routes_api.get("/api/realms").json()["realms"]}
    assert listed == {"placed-abc123": "alpha", "old-abc123": "alpha"}
    (row,) = routes_api.get("/api/hosts").json()["hosts"]
    assert {k: row[k] for k in ("host_id", "state", "backend", "capacity", "load", "realms")} == {
        "host_id": "alpha", "state": "up", "backend": "bwrap", "capacity": 2, "load": 1,
        "realms": ["placed-abc123"],
    }  # fmt: skip
    assert 0 <= row["heartbeat_age_s"] < 60
    assert client.get("/api/hosts").status_code == 401
    assert routes_api.get("/api/hosts?x=1").status_code == 400


def test_nul_and_control_characters_are_refused_before_the_database(routes_api):
    build_realm("nul-abc123", state=Realm.State.RUNNING)
    assert routes_api.get("/api/realms/nul%00-abc123").status_code in (400, 404)
    assert routes_api.post("/api/realms/nul%00/stop").status_code in (400, 404)
    assert routes_api.get("/api/realms/NOT-AN-ID").status_code == 404
    for path in (
        "/api/realms/nul-abc123/events?kind=sp%00end",
        "/api/runs?scenario=a%00b",
        "/api/realms/nul-abc123/outputs/a%00b",
    ):
        response = routes_api.get(path)
        assert response.status_code == 400, (path, response.content)
        assert response.json()
