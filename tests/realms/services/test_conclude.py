"""Concluding: the teardown, then the ``archived`` event, the archive folder and the row."""

from __future__ import annotations

import json

import pytest

from chronicle.kinds import Kind
from chronicle.models import Event
from realms.forge import layout
from realms.models import Realm
from realms.services.conclude import finish_conclusion

from .endings import ARCHIVE_FILES, conclude, live_realm, teardown_errors

pytestmark = pytest.mark.django_db


def test_a_teardown_run_again_after_a_crash_keeps_the_first_capture():
    realm_id = "twice-over"
    conclude(live_realm(realm_id, Realm.State.RUNNING))
    finish_conclusion(realm_id, announce_end=False)
    outputs = [e.payload for e in Event.objects.filter(realm_id=realm_id, kind=Kind.OUTPUT)]
    assert [(o["path"], o.get("missing", False)) for o in outputs] == [("report.md", False)]
    assert (layout.archive_dir(realm_id) / "outputs" / "report.md").read_text() == "the findings"


def test_a_concluded_realm_has_its_archive_folder():
    realm_id = "archived-here"
    conclude(live_realm(realm_id, Realm.State.RUNNING))
    folder = layout.archive_dir(realm_id)
    assert {p.name for p in folder.iterdir()} == ARCHIVE_FILES | {"outputs", "logs"}
    assert (folder / "outputs" / "report.md").read_text() == "the findings"
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["state"] == "archived"
    assert manifest["agents"]["ping"]["input_cost_per_token"] is not None
    events = [json.loads(line) for line in (folder / "events.jsonl").read_text().splitlines()]
    assert events[-1]["payload"] == {"event": "archived"}
    assert "## Spend" in (folder / "report.md").read_text()


def test_an_archive_that_cannot_be_written_never_keeps_the_realm_from_archived():
    realm_id = "archive-blocked"
    realm = live_realm(realm_id, Realm.State.RUNNING)
    layout.archive_dir(realm_id).write_text("in the way")
    conclude(realm)
    assert Realm.objects.get(realm_id=realm_id).state == Realm.State.ARCHIVED
    assert [e["step"] for e in teardown_errors(realm_id, announced=False)] == ["write archive"]
