"""The one teardown: the conclusion, the interruption and a failed provisioning share it."""

from __future__ import annotations

import pytest

from chronicle.kinds import Kind
from chronicle.models import Event
from ledger.models import VirtualKey
from realms.forge import layout
from realms.models import Realm

from .endings import CALLERS, live_realm, teardown_errors

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("caller", list(CALLERS))
def test_every_caller_runs_the_same_steps_in_order_past_failures(caller, settings):
    settings.BEARPIT_MATRIX_URL = "http://127.0.0.1:9"
    before, end, after = CALLERS[caller]
    realm_id = f"td-{caller.split()[0]}"
    realm = live_realm(realm_id, before, bus=True)
    # A file where the outputs folder goes: capturing fails, and what follows still runs.
    layout.outputs_dir(realm_id).write_text("in the way")
    end(realm)
    assert Realm.objects.get(realm_id=realm_id).state == after
    errors = teardown_errors(realm_id)
    steps = [e["step"] for e in errors]
    announced = ["open floor", "announce"] if caller == "conclusion" else []
    assert steps == [*announced, "capture outputs", "reconcile bus", "close bus"]
    assert all(set(e) == {"event", "step", "detail"} and e["detail"] for e in errors)
    # Keys were revoked before the failing capture; the sandboxes were released after it.
    assert not VirtualKey.objects.filter(realm_id=realm_id, revoked_at__isnull=True).exists()
    assert VirtualKey.objects.filter(realm_id=realm_id).exists()
    assert not layout.shared_dir(realm_id).exists()
    assert (layout.realm_dir(realm_id) / ".released").exists()


@pytest.mark.parametrize("caller", list(CALLERS))
def test_declared_outputs_are_kept_before_the_shared_folder_goes(caller):
    before, end, after = CALLERS[caller]
    realm_id = f"kept-{caller.split()[0]}"
    end(live_realm(realm_id, before))
    assert teardown_errors(realm_id, announced=False) == []
    assert (layout.outputs_dir(realm_id) / "report.md").read_text() == "the findings"
    outputs = [e.payload for e in Event.objects.filter(realm_id=realm_id, kind=Kind.OUTPUT)]
    assert [o["path"] for o in outputs] == ["report.md"]
    assert not layout.shared_dir(realm_id).exists()
    assert (layout.archive_dir(realm_id).exists()) == (after == Realm.State.ARCHIVED)
