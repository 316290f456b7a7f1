"""Rerun: a realm again, from its stored snapshot or from its package as it is now."""

from __future__ import annotations

import pytest

from ledger.services.profiles import seed_profiles
from realms.models import Realm
from realms.services.launch import LaunchOptions, launch_realm
from realms.services.rerun import rerun_realm
from tests.conftest import REPO

TOOLCHECK = REPO / "examples" / "toolcheck"
pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def profiles() -> None:
    seed_profiles()


def test_rerun_replays_the_snapshot_or_reloads_the_package(realm_id):
    first = launch_realm(TOOLCHECK, LaunchOptions(realm_id=realm_id))
    again = rerun_realm(realm_id)
    assert again.realm_id != realm_id and again.state == Realm.State.PENDING
    assert again.project == first.project
    assert again.run_config["agents"] == first.run_config["agents"]
    latest = rerun_realm(realm_id, "latest", new_realm_id=f"{realm_id}-b")
    assert latest.realm_id == f"{realm_id}-b"
    assert latest.package_path == first.package_path
