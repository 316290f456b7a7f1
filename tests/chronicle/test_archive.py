from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
from decimal import Decimal

import pytest

from chronicle.archive import UnknownRealmError, archive_realm, package_digest
from chronicle.kinds import Kind
from chronicle.report import render_report
from chronicle.transcript import render_transcript
from ledger.models import VirtualKey
from ledger.services.keys import mint_virtual_key
from realms.forge.layout import realm_dir
from realms.models import Realm, Scenario, ScenarioFile
from tests.chronicle.realmkit import event, running, say
from tests.fixtures.realms import build_realm

pytestmark = [pytest.mark.timeout(30), pytest.mark.django_db]

REALM = "relay-abc123"
RUN_CONFIG = {
    "provider": "offline",
    "parameters": {"rounds": 3},
    "package": "relay",
    "agents": [
        {
            "id": "ping",
            "role": "participant",
            "model": "scripted-small",
            "provider": "offline",
            "input_cost_per_token": 1e-06,
            "output_cost_per_token": 5e-06,
            "budget_usd": 0.5,
            "private_messaging": {"enabled": False},
        },
        {"id": "umpire", "role": "referee", "model": "scripted-medium", "provider": "offline"},
    ],
}


@pytest.fixture(autouse=True)
def _home(settings, tmp_path):
    settings.BEARPIT_HOME = tmp_path / "home"


def build_relay() -> Realm:
    scenario = Scenario.objects.create(name="relay", title="Relay")
    files = {"project.json": b'{"metadata": {"name": "Relay"}}', "agents/ping/persona.md": b"hi"}
    for path, content in files.items():
        ScenarioFile.objects.create(scenario=scenario, path=path, content=content)
    realm = build_realm(REALM, name="Relay", scenario=scenario, package_name="relay")
    running(REALM, ts=1_000, config=RUN_CONFIG)
    say(REALM, "go", 1_100, agent="ping")
    event(REALM, Kind.SPEND, {"agent": "ping", "usd": 0.01}, 1_200)
    event(REALM, Kind.VERDICT, {"outcome": "ping relayed", "final": True}, 1_300)
    mint_virtual_key(
        realm_id=REALM,
        agent_id="umpire",
        provider="offline",
        model="scripted-medium",
        cap_usd=Decimal("1"),
        on_exhausted="starve",
    )
    home = realm_dir(REALM)
    (home / "outputs" / "sections").mkdir(parents=True)
    (home / "outputs" / "sections" / "intro.md").write_text("# Intro\n")
    (home / "logs").mkdir()
    (home / "logs" / "ping.log").write_text("runtime started\n")
    return realm


def test_the_archive_holds_everything_needed_to_read_and_rerun_the_realm():
    build_relay()
    folder = archive_realm(REALM)
    assert folder == realm_dir(REALM) / "archive"
    assert (folder / "transcript.txt").read_text() == render_transcript(REALM)
    assert (folder / "report.md").read_text() == render_report(REALM)
    assert "**Outcome:** ping relayed" in (folder / "report.md").read_text()

    events = [json.loads(line) for line in (folder / "events.jsonl").read_text().splitlines()]
    # the launch chronicled the tool manifest before the test's own events
    assert [e["kind"] for e in events] == ["lifecycle", "spend", "verdict", "tool_manifest", "key"]
    assert events[2]["payload"] == {"outcome": "ping relayed", "final": True}
    messages = [json.loads(line) for line in (folder / "messages.jsonl").read_text().splitlines()]
    assert messages[0]["body"] == "go" and messages[0]["sender_agent"] == "ping"

    assert (folder / "outputs" / "sections" / "intro.md").read_text() == "# Intro\n"
    assert (folder / "logs" / "ping.log").read_text() == "runtime started\n"


def test_the_manifest_pins_package_models_prices_parameters_and_software():
    build_relay()
    manifest = json.loads((archive_realm(REALM) / "manifest.json").read_text())
    files = {"project.json": b'{"metadata": {"name": "Relay"}}', "agents/ping/persona.md": b"hi"}
    total, per_file = package_digest(files)
    assert manifest["package"]["name"] == "relay"
    assert manifest["package"]["sha256"] == total
    assert (
        manifest["package"]["files"]["agents/ping/persona.md"] == hashlib.sha256(b"hi").hexdigest()
    )
    assert per_file == manifest["package"]["files"]
    assert manifest["parameters"] == {"rounds": 3}
    assert manifest["provider"] == "offline"
    # What launch resolved, read through the realm's plan (prices live on the keys).
    assert manifest["agents"]["ping"] == {
        "role": "participant",
        "provider": "offline",
        "model": "scripted-small",
        "budget_usd": 0.5,
        "on_exhausted": "starve",
    }
    assert manifest["agents"]["umpire"]["model"] == "scripted-medium"
    # run_config carries no prices for the umpire: they come from its metered key
    assert manifest["agents"]["umpire"]["input_cost_per_token"] == 1e-06
    assert manifest["agents"]["umpire"]["output_cost_per_token"] == 4e-06
    assert "secret" not in json.dumps(manifest) and "key_hash" not in json.dumps(manifest)
    software = manifest["software"]
    assert software["python"] == platform.python_version()
    assert set(software) == {"python", "bearpit", "django", "matrix-synapse", "litellm", "mcp"}
    assert all(v and v != "not installed" for v in software.values())
    assert manifest["files"]["logs/ping.log"] == hashlib.sha256(b"runtime started\n").hexdigest()
    assert "manifest.json" not in manifest["files"]


def test_prices_and_spend_come_from_the_chronicle_once_the_keys_are_gone():
    build_relay()
    VirtualKey.objects.filter(realm_id=REALM).delete()
    folder = archive_realm(REALM)
    umpire = json.loads((folder / "manifest.json").read_text())["agents"]["umpire"]
    assert umpire["input_cost_per_token"] == 1e-06
    assert umpire["output_cost_per_token"] == 4e-06
    report = (folder / "report.md").read_text()
    assert "- ping: $0.0100" in report
    assert "_Prices are nominal for umpire: it ran on the scripted provider (offline)" in report


def test_a_package_digest_changes_with_any_file():
    a, _ = package_digest({"x": b"1", "y": b"2"})
    assert a == package_digest({"y": b"2", "x": b"1"})[0]
    assert a != package_digest({"x": b"1", "y": b"3"})[0]
    assert a != package_digest({"x": b"1", "z": b"2"})[0]


def test_archive_into_an_output_folder_and_rewrite_it(tmp_path):
    build_relay()
    out = tmp_path / "exports"
    folder = archive_realm(REALM, out)
    assert folder == out / REALM
    (folder / "outputs" / "stale.txt").write_text("old")
    say(REALM, "later", 2_000, agent="ping")
    again = archive_realm(REALM, out)
    assert not (again / "outputs" / "stale.txt").exists()
    assert "later" in (again / "transcript.txt").read_text()


def test_symlinks_in_outputs_are_kept_as_links_never_followed(tmp_path):
    build_relay()
    secret = tmp_path / "outside.txt"
    secret.write_text("host file")
    os.symlink(secret, realm_dir(REALM) / "outputs" / "leak.txt")
    folder = archive_realm(REALM)
    assert (folder / "outputs" / "leak.txt").is_symlink()
    assert "outputs/leak.txt" not in json.loads((folder / "manifest.json").read_text())["files"]


def test_unknown_or_malformed_realms_are_refused(tmp_path):
    with pytest.raises(UnknownRealmError, match="no such realm"):
        archive_realm("nobody-000000", tmp_path)
    with pytest.raises(UnknownRealmError, match="not a valid realm id"):
        archive_realm("../escape", tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_a_realm_without_stored_package_files_says_so(tmp_path):
    realm = build_realm("bare-abc123")
    # The folder it was launched from is gone and the library holds no copy.
    shutil.rmtree(realm.package_path)
    manifest = json.loads((archive_realm("bare-abc123", tmp_path) / "manifest.json").read_text())
    assert manifest["package"]["sha256"] is None
    assert "not available" in manifest["package"]["note"]
    assert (tmp_path / "bare-abc123" / "outputs").is_dir()
