"""One realm-id rule: every place that takes a realm id refuses the same ones."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from chronicle.archive import UnknownRealmError, archive_realm
from ledger.services.profiles import seed_profiles
from realms.forge import layout
from realms.herald.localparts import agent_localpart
from realms.ids import InvalidRealmId, check_realm_id, is_realm_id
from realms.services.launch import LaunchError, LaunchOptions, launch_realm
from tests.conftest import REPO

pytestmark = pytest.mark.django_db

REFUSED = ["", "Relay", "a_b", "a.b", "../up", "-lead", "a/b", "a=b", "a b", "x" * 81]
ACCEPTED = ["a", "relay-abc123", "0" * 80]


def launch(realm_id: str) -> None:
    seed_profiles()
    launch_realm(REPO / "examples" / "toolcheck", LaunchOptions(realm_id=realm_id))


PLACES: dict[str, tuple[Callable[[str], object], type[Exception]]] = {
    "rule": (check_realm_id, InvalidRealmId),
    "launch": (launch, LaunchError),
    "layout": (layout.realm_dir, layout.LayoutError),
    "archive": (archive_realm, UnknownRealmError),
    "matrix localpart": (lambda realm_id: agent_localpart(realm_id, "ping"), ValueError),
}


# Launch reads an empty id as none given, and makes one: that pair is not a refusal.
REFUSALS = [(p, r) for p in PLACES for r in REFUSED if not (p == "launch" and not r)]


@pytest.mark.parametrize(("place", "realm_id"), REFUSALS)
def test_every_place_refuses_an_id_outside_the_rule(place, realm_id):
    call, error = PLACES[place]
    assert not is_realm_id(realm_id)
    with pytest.raises(error, match="realm id"):
        call(realm_id)


@pytest.mark.parametrize("realm_id", ACCEPTED)
def test_an_id_inside_the_rule_passes_everywhere(realm_id):
    assert check_realm_id(realm_id) == realm_id
    launch(realm_id)
    assert layout.realm_dir(realm_id).name == realm_id
    assert archive_realm(realm_id).is_dir()
    assert agent_localpart(realm_id, "ping").endswith(f"{realm_id}=ping")
