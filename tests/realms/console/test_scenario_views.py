"""The scenario pages through Django's test client: what they list, and every refusal
(bad uploads, paths escaping a zip, invalid saves, bad launch values) changing nothing."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest

from realms.library import files as trees
from realms.library import services as library
from realms.models import Realm, Scenario, ScenarioFile
from tests.conftest import REPO

pytestmark = [pytest.mark.timeout(120), pytest.mark.django_db]

EXAMPLES = sorted(p.name for p in (REPO / "examples").iterdir() if (p / "project.json").is_file())


@pytest.fixture(autouse=True)
def _home(settings, tmp_path):
    settings.BEARPIT_HOME = tmp_path / "home"
    settings.BEARPIT_EXAMPLES_DIR = REPO / "examples"


def library_state() -> list[tuple[str, str, str, bytes]]:
    return [
        (f.scenario.name, f.scenario.source, f.path, bytes(f.content))
        for f in ScenarioFile.objects.select_related("scenario").order_by("scenario__name", "path")
    ]


def editor_post(files: dict[str, str]) -> dict[str, list[str]]:
    return {"path": list(files), "content": list(files.values())}


def toolcheck_texts() -> dict[str, str]:
    root = REPO / "examples" / "toolcheck"
    return {
        p.relative_to(root).as_posix(): p.read_text()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_a_browser_without_the_operator_session_sees_no_page(client):
    for url in ("/scenarios/", "/scenarios/toolcheck/", "/scenarios/toolcheck/edit", "/skills/"):
        response = client.get(url)
        assert response.status_code == 403, url
        assert b"not signed in" in response.content
    response = client.post("/scenarios/toolcheck/validate", editor_post({"a": "b"}))
    assert response.status_code == 403
    assert not Scenario.objects.filter(source=Scenario.Source.USER).exists()


def test_every_example_is_listed_with_its_readme_and_a_cost_note(operator):
    page = operator.get("/scenarios/").content.decode()
    for name in EXAMPLES:
        assert f'id="scenario-{name}"' in page, name
    # relay's README: its title is a heading below the card's, its cost its own estimate.
    assert "<h3>relay</h3>" in page
    assert "≈$0.66" in page and "README estimate" in page
    # toolcheck's README has no cost section: the note comes from the budgets, and says so.
    assert "in budget caps" in page and "from budgets" in page


def test_an_invalid_scenario_is_marked_with_its_first_error(operator):
    files = {k: v.encode() for k, v in toolcheck_texts().items()}
    agent = json.loads(files["agents/ping/agent.json"])
    agent["budget"]["on_exhausted"] = "explode"
    files["agents/ping/agent.json"] = json.dumps(agent).encode()
    library.store_tree("broken", files)
    page = operator.get("/scenarios/").content.decode()
    card = page.split('id="scenario-broken"')[1].split('id="scenario-')[0]
    assert "Does not load" in card
    assert "agents/ping/agent.json: budget.on_exhausted" in card
    assert "Launch broken" not in card


def test_readme_html_is_shown_as_text(operator):
    files = {k: v.encode() for k, v in toolcheck_texts().items()}
    files["README.md"] = b"# evil\n\n<script>alert(1)</script>\n\n[x](javascript:alert(1))\n"
    library.store_tree("evil", files)
    page = operator.get("/scenarios/evil/").content.decode()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<script>alert(1)" not in page
    assert 'href="javascript:' not in page


def test_the_preview_shows_roster_rules_parameters_and_readme(operator):
    page = operator.get("/scenarios/relay/").content.decode()
    for text in (
        "Roster",
        "<code>editor</code>",
        "referee",
        "large",
        "$2.00",
        "Personas",
        "Mechanics",
        "Turns",
        "one-at-a-time",
        "referee_verdict",
        "Parameters",
        "<code>topic</code>",
        "<code>rounds</code>",
        "README",
    ):
        assert text in page, text
    assert operator.get("/scenarios/no-such/").status_code == 404


def test_a_located_error_comes_back_while_typing_and_nothing_is_stored(operator):
    operator.get("/scenarios/")
    before = library_state()
    texts = toolcheck_texts()
    texts["agents/ping/agent.json"] = texts["agents/ping/agent.json"].replace(
        '"starve_then_kill"', '"explode"'
    )
    response = operator.post("/scenarios/toolcheck/validate", editor_post(texts))
    assert response.status_code == 200
    body = response.json()
    assert body["ok"] is False
    (error,) = body["errors"]
    assert error["file"] == "agents/ping/agent.json"
    assert error["path"] == "budget.on_exhausted"
    assert error["line"] == 6  # the line of "budget" in that file
    assert "explode" in error["message"]
    assert library_state() == before


def test_a_json_syntax_error_names_its_line(operator):
    texts = toolcheck_texts()
    texts["project.json"] = texts["project.json"].replace('"kind": "Project",', '"kind" "Project",')
    errors = operator.post("/scenarios/toolcheck/validate", editor_post(texts)).json()["errors"]
    assert [(e["file"], e["line"]) for e in errors] == [("project.json", 3)]


def test_saving_an_invalid_package_is_refused_and_changes_nothing(operator):
    operator.get("/scenarios/")  # the examples are in the library
    before = library_state()
    texts = toolcheck_texts()
    texts["agents/ping/agent.json"] = texts["agents/ping/agent.json"].replace(
        '"starve_then_kill"', '"explode"'
    )
    response = operator.post("/scenarios/toolcheck/edit", editor_post(texts))
    assert response.status_code == 400
    page = response.content.decode()
    assert "nothing was written" in page
    assert "budget.on_exhausted" in page and "line 6" in page
    assert library_state() == before
    assert not Scenario.objects.filter(name="toolcheck", source=Scenario.Source.USER).exists()


def test_saving_an_example_makes_a_user_copy_that_shadows_it(operator):
    operator.get("/scenarios/")
    example = library.scenario_files(
        Scenario.objects.get(name="toolcheck", source=Scenario.Source.EXAMPLE)
    )
    texts = toolcheck_texts()
    texts["agents/ping/persona.md"] = "You are Ping, and brief.\n"
    response = operator.post("/scenarios/toolcheck/edit", editor_post(texts))
    assert response.status_code == 302, response.content.decode()[:2000]
    copy = Scenario.objects.get(name="toolcheck", source=Scenario.Source.USER)
    assert library.scenario_files(copy)["agents/ping/persona.md"] == b"You are Ping, and brief.\n"
    assert library.resolve("toolcheck") == copy
    unchanged = Scenario.objects.get(name="toolcheck", source=Scenario.Source.EXAMPLE)
    assert library.scenario_files(unchanged) == example
    page = operator.get("/scenarios/toolcheck/").content.decode()
    assert "shadows the bundled example" in page


def test_a_tampered_editor_form_is_refused(operator):
    operator.get("/scenarios/")
    before = library_state()
    response = operator.post(
        "/scenarios/toolcheck/edit", {"path": ["project.json", "x"], "content": ["{}"]}
    )
    assert response.status_code == 400
    assert "incomplete" in response.content.decode()
    escape = operator.post("/scenarios/toolcheck/validate", editor_post({"../escape": "x"}))
    assert escape.status_code == 200
    (error,) = escape.json()["errors"]
    assert "relative path inside the package" in error["message"]
    assert "bearpit-check" not in error["message"]  # our scratch folder is not named
    refused = operator.post("/scenarios/toolcheck/edit", editor_post({"../escape": "x"}))
    assert refused.status_code == 400
    assert library_state() == before


def zip_of(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def upload(name: str, data: bytes):
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile(name, data, content_type="application/zip")


def test_imports_that_escape_or_are_not_zips_are_refused(operator):
    before = library_state()
    escape = zip_of({"project.json": b"{}", "../../etc/evil": b"x"})
    response = operator.post("/scenarios/import", {"archive": upload("evil.zip", escape)})
    assert response.status_code == 400
    assert "relative path inside the package" in response.content.decode()
    junk = operator.post("/scenarios/import", {"archive": upload("junk.zip", b"not a zip")})
    assert junk.status_code == 400 and "not a zip archive" in junk.content.decode()
    nothing = operator.post("/scenarios/import", {})
    assert nothing.status_code == 400 and "choose a zip" in nothing.content.decode()
    folder = operator.post(
        "/scenarios/import",
        {
            "folder": [upload("agent.json", b"{}"), upload("x", b"y")],
            "folder_path": ["pkg/agents/a/agent.json", "pkg/../../x"],
        },
    )
    assert folder.status_code == 400
    assert "relative path inside the package" in folder.content.decode()
    lost = operator.post(
        "/scenarios/import", {"folder": [upload("agent.json", b"{}")], "folder_path": []}
    )
    assert lost.status_code == 400 and "paths did not arrive" in lost.content.decode()
    assert library_state() == before
    assert not Path(trees.__file__).with_name("evil").exists()


def test_a_folder_and_a_zip_import_and_export_round_trip(operator):
    root = REPO / "examples" / "toolcheck"
    paths = [p for p in sorted(root.rglob("*")) if p.is_file()]
    response = operator.post(
        "/scenarios/import",
        {
            "folder": [upload(p.name, p.read_bytes()) for p in paths],
            "folder_path": [f"toolcheck/{p.relative_to(root).as_posix()}" for p in paths],
            "name": "mine",
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    mine = Scenario.objects.get(name="mine", source=Scenario.Source.USER)
    assert mine.valid
    exported = operator.get("/scenarios/mine/export")
    assert exported["Content-Disposition"] == 'attachment; filename="mine.zip"'
    again = operator.post("/scenarios/import", {"archive": upload("mine.zip", exported.content)})
    assert again.status_code == 400 and "tick replace" in again.content.decode()
    replaced = operator.post(
        "/scenarios/import",
        {"archive": upload("mine.zip", exported.content), "replace": "1"},
    )
    assert replaced.status_code == 302
    assert library.scenario_files(library.resolve("mine")) == {
        p.relative_to(root).as_posix(): p.read_bytes() for p in paths
    }


def test_new_clone_and_delete(operator):
    operator.get("/scenarios/")
    bad = operator.post("/scenarios/new", {"name": "../x"})
    assert bad.status_code == 400 and "expected letters" in bad.content.decode()
    taken = operator.post("/scenarios/new", {"name": "toolcheck"})
    assert taken.status_code == 400 and "already has a scenario" in taken.content.decode()
    created = operator.post("/scenarios/new", {"name": "fresh"})
    assert created.status_code == 302
    assert Scenario.objects.get(name="fresh").valid  # the template loads

    operator.post("/scenarios/relay/clone", {"name": "fresh"})
    assert library.scenario_files(library.resolve("fresh"))["agents/solo/agent.json"]
    operator.post("/scenarios/relay/clone", {"name": "relay-2"})
    assert library.resolve("relay-2").valid

    before = library_state()
    refused = operator.post("/scenarios/relay/delete", follow=True)
    assert "examples cannot be deleted" in refused.content.decode()
    assert library_state() == before
    operator.post("/scenarios/relay-2/delete")
    assert not Scenario.objects.filter(name="relay-2").exists()


def test_a_bad_launch_value_is_refused_beside_its_field_and_nothing_starts(operator):
    form = operator.get("/scenarios/relay/launch").content.decode()
    assert '<select name="param-topic"' in form
    assert 'min="1"' in form and 'max="5"' in form
    response = operator.post(
        "/scenarios/relay/launch",
        {"param-topic": "a lighthouse that went dark", "param-rounds": "9"},
    )
    assert response.status_code == 400
    page = response.content.decode()
    rounds = page.split('id="id_param-rounds"')[1].split("</div>")[0]
    assert "expected at most 5; got" in rounds
    assert not Realm.objects.exists()


def test_a_launch_with_no_worker_says_so_and_starts_nothing(operator):
    response = operator.post("/scenarios/toolcheck/launch", {})
    assert response.status_code == 503
    assert "Nothing here would run the realm" in response.content.decode()
    assert not Realm.objects.exists()


def test_elevated_grants_need_the_consent_box(operator):
    files = {k: v.encode() for k, v in toolcheck_texts().items()}
    project = json.loads(files["project.json"])
    project["spec"]["environment"]["network_egress"] = "open"
    files["project.json"] = json.dumps(project).encode()
    library.store_tree("open-door", files)
    form = operator.get("/scenarios/open-door/launch").content.decode()
    assert "network_egress: open" in form
    response = operator.post("/scenarios/open-door/launch", {})
    assert response.status_code == 400
    page = response.content.decode()
    consent = page.split('id="id_allow_elevated_tools"')[1].split("</div>")[0]
    assert "tick the box to consent" in consent
    assert not Realm.objects.exists()


def test_skills_lists_the_builtins_and_shows_one(operator):
    page = operator.get("/skills/").content.decode()
    assert "agent-basics" in page and "referee-basics" in page
    detail = operator.get("/skills/builtin/agent-basics/")
    assert detail.status_code == 200 and b"tool call" in detail.content
    assert operator.get("/skills/builtin/nope/").status_code == 404


def test_a_launch_past_capacity_says_so_and_starts_nothing(operator, settings, realm_builder):
    from realms.services.queue import close_local_worker, open_local_worker

    realm_builder("already-running", state=Realm.State.RUNNING)
    settings.BEARPIT_MAX_ACTIVE_REALMS = 1
    handed = open_local_worker()  # as pit_serve does: this process would provision
    try:
        response = operator.post("/scenarios/toolcheck/launch", {})
    finally:
        close_local_worker()
    assert response.status_code == 429
    page = response.content.decode()
    assert "Too many realms are running." in page and "1 realms are already active" in page
    assert list(Realm.objects.values_list("realm_id", flat=True)) == ["already-running"]
    assert handed.empty()


def test_a_good_launch_goes_to_the_realm_page(operator):
    from realms.services.queue import close_local_worker, open_local_worker

    open_local_worker()  # as pit_serve does: this process would provision
    try:
        response = operator.post(
            "/scenarios/relay/launch",
            {
                "param-topic": "a robot that inherits a bakery",
                "param-rounds": "3",
                "realm_id": "from-the-form",
            },
        )
    finally:
        close_local_worker()
    assert response.status_code == 302
    assert response["Location"] == "/realms/from-the-form/"
    realm = Realm.objects.get(realm_id="from-the-form")
    assert realm.parameters == {"topic": "a robot that inherits a bakery", "rounds": "3"}


def test_deleting_a_user_copy_asks_first(operator):
    operator.post("/scenarios/relay/clone", {"name": "relay-2"})
    asked = operator.get("/scenarios/relay-2/delete")
    assert asked.status_code == 200
    assert "Delete your copy of relay-2?" in asked.content.decode()
    assert Scenario.objects.filter(name="relay-2").exists()
