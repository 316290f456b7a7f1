"""The realm page's panels through Django's test client: what each panel shows, and the
actions' refusals (located, 4xx, nothing changed)."""

from __future__ import annotations

import queue
import re
from typing import Any, Literal

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from chronicle.kinds import Kind, Lifecycle
from chronicle.models import Event
from realms.console.report_html import markdown_html
from realms.forge import layout
from realms.models import Realm
from realms.realmtools.context import Caller
from realms.realmtools.facts import load_facts
from realms.realmtools.identity import Identity
from realms.realmtools.machine import service
from tests.chronicle.realmkit import event, say
from tests.fixtures.realms import build_realm
from tests.realms.realmtools.machines import AUCTION

pytestmark = [pytest.mark.timeout(60), pytest.mark.django_db]

TERMINATION = [
    {"type": "referee_verdict"},
    {"type": "duration", "limit": "30m"},
    {"type": "stall", "limit": "10m"},
]
ROSTER = [{"id": "ann"}, {"id": "bob"}, {"id": "ref", "role": "referee"}]


@pytest.fixture
def operator(client: Client, settings: Any, tmp_path: Any) -> Client:
    settings.BEARPIT_HOME = tmp_path
    user = get_user_model().objects.create_user(
        username="operator", is_superuser=True, is_staff=True
    )
    client.force_login(user)
    return client


def _htmx(client: Client, path: str, data: dict[str, str] | None = None) -> Any:
    return client.post(path, data or {}, HTTP_HX_REQUEST="true")


def _running(realm_id: str = "pan-run-1", **kwargs: Any) -> Realm:
    kwargs.setdefault("agents", ROSTER)
    kwargs.setdefault("spec", {"termination": TERMINATION})
    return build_realm(realm_id, state=Realm.State.RUNNING, **kwargs)


def _chronicle_run(realm: Realm, ts: int = 1_000) -> None:
    payload = {
        "event": Lifecycle.RUNNING,
        "commons_room": "!commons:x",
        "config": realm.run_config,
        "project": realm.project,
    }
    event(realm.realm_id, Kind.LIFECYCLE, payload, ts)


def _finished(realm_id: str, *, played: bool, outcome: str = "ann wins") -> Realm:
    realm = _running(realm_id)
    _chronicle_run(realm)
    if played:
        say(realm_id, "ann -> red", 2_000, agent="ann", channel="!commons:x")
        say(realm_id, "red -> blue", 3_000, agent="bob", channel="!commons:x")
    event(realm_id, Kind.VERDICT, {"outcome": outcome, "winner": "ann"}, 4_000)
    concluding = {"event": Lifecycle.CONCLUDING, "reason": "referee_verdict", "detail": outcome}
    event(realm_id, Kind.LIFECYCLE, concluding, 5_000)
    event(realm_id, Kind.LIFECYCLE, {"event": Lifecycle.ARCHIVED}, 6_000)
    Realm.objects.filter(pk=realm.pk).update(state=Realm.State.ARCHIVED)
    return realm


def _text(response: Any) -> str:
    return str(response.content.decode())


def _between(html: str, start: str, end: str = "</section>") -> str:
    found = re.search(re.escape(start) + r"(.*?)" + re.escape(end), html, re.S)
    assert found, f"{start!r} not in the page"
    return str(found.group(1))


def test_a_running_realm_shows_its_configuration_in_declared_order(operator: Client) -> None:
    realm = _running()
    response = operator.get(f"/realms/{realm.realm_id}/panels")
    assert response.status_code == 200
    html = _text(response)
    config = _between(html, 'id="panel-config"')
    assert realm.provider in _between(config, 'id="config-provider"', "</dd>")
    agents = _between(config, 'id="config-agents"', "</table>")
    for agent in realm.run_config["agents"]:
        assert agent["id"] in agents and agent["model"] in agents
    termination = _between(config, 'id="config-termination"', "</ol>")
    types = re.findall(r"<li><code>([a-z_]+)</code>", termination)
    assert types == ["referee_verdict", "duration", "stall"]
    assert "30m" in termination and "10m" in termination
    # Running: nothing to judge yet, the stop is offered, the message box lists who is live.
    assert 'data-integrity="pending"' in html
    assert 'id="stop-button"' in html
    options = re.findall(r'<option value="([^"]*)"', _between(html, 'id="message-to"', "</select>"))
    assert options == ["", "ann", "bob", "ref"]
    assert 'id="panel-report"' not in html


def test_parameters_and_mechanics_are_listed(operator: Client) -> None:
    realm = _running(
        "pan-mech-1",
        spec={"mechanics": [{"kind": "state-machine", "machine": AUCTION}]},
        agents=[{"id": "orin"}, {"id": "vela"}, {"id": "zed"}, {"id": "themis", "role": "referee"}],
    )
    html = _text(operator.get(f"/realms/{realm.realm_id}/panels"))
    assert "<code>state-machine</code>" in _between(html, 'id="config-mechanics"', "</ul>")


def test_unknown_realms_and_strangers_are_refused(operator: Client) -> None:
    assert operator.get("/realms/no-such-realm/panels").status_code == 404
    assert _htmx(operator, "/realms/no-such-realm/stop").status_code == 404
    realm = _running("pan-anon-1")
    stranger = Client()
    assert stranger.get(f"/realms/{realm.realm_id}/panels").status_code == 403
    assert stranger.post(f"/realms/{realm.realm_id}/stop").status_code == 403
    realm.refresh_from_db()
    assert realm.stop_requested is False


def test_stop_on_a_finished_realm_is_a_409_and_changes_nothing(operator: Client) -> None:
    realm = _finished("pan-done-1", played=True)
    panels = _text(operator.get(f"/realms/{realm.realm_id}/panels"))
    assert 'id="stop-button"' not in panels
    assert re.search(r'<button type="button" class="danger" disabled', panels)

    response = _htmx(operator, f"/realms/{realm.realm_id}/stop")
    assert response.status_code == 409
    note = _between(_text(response), 'id="stop-note">', "</p>")
    assert "already archived" in note and "nothing to stop" in note
    realm.refresh_from_db()
    assert realm.stop_requested is False and realm.state == Realm.State.ARCHIVED


def test_stop_of_a_running_realm_sets_the_kill_switch(operator: Client) -> None:
    realm = _running("pan-stop-1")
    response = _htmx(operator, f"/realms/{realm.realm_id}/stop")
    assert response.status_code == 200
    html = _text(response)
    assert "concludes as manual on its next tick" in _between(html, 'id="stop-note">', "</p>")
    assert 'id="stop-button"' not in html  # asked once; the panel says it is pending
    assert "Stop requested" in _between(html, 'id="stop-why">', "</span>")
    realm.refresh_from_db()
    assert realm.stop_requested is True


def test_a_stop_without_htmx_goes_back_to_the_realm_page(operator: Client) -> None:
    realm = _running("pan-stop-2")
    response = operator.post(f"/realms/{realm.realm_id}/stop")
    assert response.status_code == 302 and response["Location"] == f"/realms/{realm.realm_id}/"
    realm.refresh_from_db()
    assert realm.stop_requested is True


def test_stop_needs_a_post(operator: Client) -> None:
    realm = _running("pan-stop-3")
    assert operator.get(f"/realms/{realm.realm_id}/stop").status_code == 405
    realm.refresh_from_db()
    assert realm.stop_requested is False


def _operator_events(realm_id: str) -> int:
    return Event.objects.filter(realm_id=realm_id, payload__event="operator_message").count()


def test_a_message_to_an_unknown_agent_is_refused_beside_the_field(operator: Client) -> None:
    realm = _running("pan-msg-1")
    before = Event.objects.filter(realm_id=realm.realm_id).count()
    response = _htmx(
        operator, f"/realms/{realm.realm_id}/message", {"text": "hello", "to": "mallory"}
    )
    assert response.status_code == 400
    html = _text(response)
    error = _between(html, 'id="message-error-to">', "</span>")
    assert "mallory" in error and "ann" in error
    assert 'aria-invalid="true" aria-describedby="message-error-to"' in html
    assert ">hello</textarea>" in html  # what the operator typed is kept
    assert Event.objects.filter(realm_id=realm.realm_id).count() == before


def test_an_empty_message_is_refused_beside_the_text(operator: Client) -> None:
    realm = _running("pan-msg-2")
    response = _htmx(operator, f"/realms/{realm.realm_id}/message", {"text": "   "})
    assert response.status_code == 400
    assert "empty" in _between(_text(response), 'id="message-error-text">', "</span>")
    assert _operator_events(realm.realm_id) == 0


def test_a_message_to_a_finished_realm_is_refused(operator: Client) -> None:
    realm = _finished("pan-msg-3", played=True)
    response = _htmx(operator, f"/realms/{realm.realm_id}/message", {"text": "hi"})
    assert response.status_code == 409
    assert "not running" in _between(_text(response), 'id="message-error-realm">', "</p>")
    assert _operator_events(realm.realm_id) == 0


def test_a_message_the_bus_cannot_take_is_said_to_be_recorded_not_delivered(
    operator: Client,
) -> None:
    realm = _running("pan-msg-4")  # launched but never provisioned: it has no bus
    response = _htmx(operator, f"/realms/{realm.realm_id}/message", {"text": "status?"})
    assert response.status_code == 200
    note = _between(_text(response), 'id="message-note">', "</p>")
    assert note.startswith("Recorded in the Chronicle but not delivered")
    assert "no message bus" in note and "Delivered" not in note
    assert _operator_events(realm.realm_id) == 1


def test_a_finished_realm_shows_its_report_escaped_and_integrity_ok(operator: Client) -> None:
    realm = _finished("pan-rep-1", played=True, outcome="ann <script>alert(1)</script> wins")
    html = _text(operator.get(f"/realms/{realm.realm_id}/panels"))
    report = _between(html, 'id="report-body">', "</div>")
    # Sections sit under the panel's heading; the report's own title is not repeated.
    assert "<h3>Termination</h3>" in report and "final report" not in report
    assert "ann &lt;script&gt;alert(1)&lt;/script&gt; wins" in report
    assert "<script>" not in html
    assert 'data-integrity="ok"' in html


def test_a_verdict_without_play_warns_that_the_result_may_mean_nothing(operator: Client) -> None:
    realm = _finished("pan-rep-2", played=False)
    html = _text(operator.get(f"/realms/{realm.realm_id}/panels"))
    banner = _between(html, 'data-integrity="warn">', "</div>")
    assert "may mean nothing" in banner and "verdict_without_play" in banner


def _caller(realm_id: str, agent_id: str, roster: tuple[str, ...]) -> Caller:
    role: Literal["referee", "player"] = "referee" if agent_id == "themis" else "player"
    return Caller(Identity(realm_id, agent_id, role, roster, frozenset()), load_facts(realm_id))


@pytest.fixture
def auction() -> Realm:
    service.forget()
    seats = ("orin", "vela", "zed")
    realm = build_realm(
        "pan-auction-1",
        agents=[{"id": a} for a in seats] + [{"id": "themis", "role": "referee"}],
        spec={"mechanics": [{"kind": "state-machine", "machine": AUCTION}]},
        state=Realm.State.RUNNING,
    )
    ref = _caller(realm.realm_id, "themis", seats)
    service.game_set(ref, "lot", "vase")
    service.game_set(ref, "reserve", 90)
    service.game_set(ref, "hand", "Ah", owner="orin")
    service.game_set(ref, "hand", "Kd", owner="vela")
    service.game_act(ref, "start", {"first": "vela"})
    service.game_act(_caller(realm.realm_id, "vela", seats), "pass")
    return realm


def test_the_game_state_is_shown_as_one_seat_saw_it(operator: Client, auction: Realm) -> None:
    html = _text(operator.get(f"/realms/{auction.realm_id}/panels"))
    machine = _between(html, 'id="panel-machine"')
    # The default seat is the first player's, never the referee's.
    assert re.search(r'<option value="orin" selected>', machine)
    assert "&quot;Ah&quot;" in machine and "vase" in machine
    assert "Kd" not in machine and "reserve" not in machine and "90" not in machine

    referee = _text(operator.get(f"/realms/{auction.realm_id}/panels/machine?as=themis"))
    assert "Kd" in referee and "reserve" in referee


def test_an_unknown_seat_is_a_400_beside_the_selector(operator: Client, auction: Realm) -> None:
    for path in ("panels/machine", "panels"):
        response = operator.get(f"/realms/{auction.realm_id}/{path}?as=mallory")
        assert response.status_code == 400, path
        html = _text(response)
        error = _between(html, 'id="machine-error">', "</p>")
        assert "mallory" in error and "orin" in error
        assert 'aria-invalid="true" aria-describedby="machine-error"' in html
        assert "Kd" not in html and "vase" not in html


def test_a_realm_without_a_machine_has_no_game_state_panel(operator: Client) -> None:
    realm = _running("pan-nomachine-1")
    assert 'id="panel-machine"' not in _text(operator.get(f"/realms/{realm.realm_id}/panels"))
    assert operator.get(f"/realms/{realm.realm_id}/panels/machine?as=ann").status_code == 404


def test_rerun_refuses_an_unknown_mode_and_a_missing_worker(operator: Client) -> None:
    realm = _finished("pan-rerun-1", played=True)
    before = Realm.objects.count()
    bad = _htmx(operator, f"/realms/{realm.realm_id}/rerun", {"mode": "yesterday"})
    assert bad.status_code == 400
    assert "yesterday" in _between(_text(bad), 'id="rerun-error">', "</p>")
    no_worker = _htmx(operator, f"/realms/{realm.realm_id}/rerun", {"mode": "snapshot"})
    assert no_worker.status_code == 409
    assert "nothing would run the realm" in _text(no_worker)
    assert Realm.objects.count() == before


def test_rerun_goes_to_the_new_realms_page(
    operator: Client, local_worker: queue.Queue[str], django_capture_on_commit_callbacks: Any
) -> None:
    realm = _finished("pan-rerun-2", played=True)
    with django_capture_on_commit_callbacks(execute=True):
        response = _htmx(operator, f"/realms/{realm.realm_id}/rerun", {"mode": "snapshot"})
    assert response.status_code == 204
    new = Realm.objects.exclude(realm_id=realm.realm_id).get()
    assert response["HX-Redirect"] == f"/realms/{new.realm_id}/"
    assert new.project == realm.project
    assert new.state == Realm.State.PENDING
    assert local_worker.get_nowait() == new.realm_id


def test_rerun_latest_without_htmx_redirects_too(
    operator: Client, local_worker: queue.Queue[str], django_capture_on_commit_callbacks: Any
) -> None:
    realm = _finished("pan-rerun-3", played=True)
    with django_capture_on_commit_callbacks(execute=True):
        response = operator.post(f"/realms/{realm.realm_id}/rerun", {"mode": "latest"})
    new = Realm.objects.exclude(realm_id=realm.realm_id).get()
    assert response.status_code == 302 and response["Location"] == f"/realms/{new.realm_id}/"


def test_captured_outputs_link_to_the_download_route(operator: Client) -> None:
    realm = _finished("pan-out-1", played=True)
    outputs = layout.archive_dir(realm.realm_id) / "outputs"
    (outputs / "notes").mkdir(parents=True)
    (outputs / "notes" / "a b.md").write_text("# minutes\n", encoding="utf-8")
    (outputs / "elsewhere").symlink_to("/etc/hostname")
    html = _text(operator.get(f"/realms/{realm.realm_id}/panels"))
    listed = _between(html, 'id="panel-outputs"')
    links = re.findall(r'<a href="([^"]+)" download>([^<]+)</a>', listed)
    assert links == [(f"/api/realms/{realm.realm_id}/outputs/notes/a%20b.md", "notes/a b.md")]
    assert "elsewhere" not in listed
    # The operator's session fetches it through the API's route, as an attachment.
    download = operator.get(links[0][0])
    assert download.status_code == 200
    assert download["Content-Disposition"].startswith("attachment")
    assert download.getvalue() == b"# minutes\n"


def test_an_action_without_the_csrf_token_is_refused(operator: Client) -> None:
    realm = _running("pan-csrf-1")
    strict = Client(enforce_csrf_checks=True)
    strict.cookies = operator.cookies
    response = strict.post(f"/realms/{realm.realm_id}/stop", HTTP_HX_REQUEST="true")
    assert response.status_code == 403
    realm.refresh_from_db()
    assert realm.stop_requested is False


def test_the_report_markdown_keeps_no_html_and_no_script_link() -> None:
    html = markdown_html(
        "# Title\n\n## Ruling\n\n- <img src=x onerror=alert(1)> "
        "[bad](javascript:alert(1)) [site](https://example.org)\n"
    )
    assert "<img" not in html and "&lt;img src=x onerror=alert(1)&gt;" in html
    assert 'href="javascript' not in html
    assert '<a href="https://example.org" rel="nofollow noopener noreferrer">site</a>' in html
    assert "Title" not in html and "<h3>Ruling</h3>" in html
