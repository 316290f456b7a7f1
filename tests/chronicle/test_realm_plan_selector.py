"""The realm's plan as the Chronicle tells it: the ``running`` event's, else the row's."""

from __future__ import annotations

import pytest

from chronicle import selectors
from chronicle.kinds import Kind
from chronicle.report import realm_title
from chronicle.services import record_event
from ledger.services.profiles import seed_profiles
from realms.models import Realm
from realms.plan import RealmPlan
from realms.services.launch import LaunchOptions, launch_realm
from tests.conftest import REPO

pytestmark = pytest.mark.django_db


def test_the_running_event_decides_and_the_row_serves_a_realm_that_never_ran() -> None:
    seed_profiles()
    realm = launch_realm(REPO / "examples" / "toolcheck", LaunchOptions(realm_id="plan-sel-1"))
    from_row = selectors.realm_plan("plan-sel-1")
    assert from_row.title == "toolcheck" and from_row.provider == realm.run_config["provider"]

    record_event(
        "plan-sel-1",
        Kind.LIFECYCLE,
        {
            "event": "running",
            "project": {"metadata": {"name": "  renamed  "}},
            "config": {"provider": "offline"},
        },
    )
    chronicled = selectors.realm_plan("plan-sel-1")
    assert (chronicled.title, chronicled.provider) == ("renamed", "offline")
    assert realm_title("plan-sel-1") == "renamed"


def test_a_realm_known_to_neither_has_an_empty_plan_and_a_plain_title() -> None:
    assert selectors.realm_plan("nowhere") == RealmPlan()
    assert realm_title("nowhere") == "Realm nowhere"
    # A hand-made row on purpose: a stored snapshot that declares no name.
    Realm.objects.create(realm_id="untitled", package_name="p", project={"metadata": {}})
    assert realm_title("untitled") == "Realm untitled"
