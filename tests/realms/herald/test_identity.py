"""Matrix user ids of agents: one per (realm, agent), never shared, checked before use."""

from __future__ import annotations

import itertools
import re

import pytest

from realms.herald.bus import BusAgent, agent_credentials, provision_bus
from realms.herald.config import operator_localpart
from realms.herald.directory import agent_localpart
from realms.herald.matrix import matrix_client
from realms.herald.models import BusRealm, BusUser

REALM_ID = re.compile(r"^[a-z0-9][a-z0-9-]{0,79}$")
AGENT_ID = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")


def _ids(pattern: re.Pattern[str], longest: int) -> list[str]:
    words = ("".join(p) for n in range(1, longest + 1) for p in itertools.product("a0-", repeat=n))
    return [w for w in words if pattern.match(w)]


def test_every_pair_of_legal_ids_gets_its_own_localpart():
    # Every realm id and agent id of up to five characters over a letter, a digit and the
    # dash (the only punctuation either may hold): 242 by 242 pairs, no two alike.
    realms, agents = _ids(REALM_ID, 5), _ids(AGENT_ID, 5)
    seen: dict[str, tuple[str, str]] = {}
    for realm, agent in itertools.product(realms, agents):
        localpart = agent_localpart(realm, agent)
        assert seen.setdefault(localpart, (realm, agent)) == (realm, agent), localpart
    assert agent_localpart("a", "b-c") != agent_localpart("a-b", "c")


def test_ids_outside_the_rules_are_refused():
    for realm, agent in (("Chess", "white"), ("chess", "White"), ("a_b", "c"), ("a", "b=c")):
        with pytest.raises(ValueError, match=r"realm id|agent id"):
            agent_localpart(realm, agent)
    with pytest.raises(ValueError, match="realm id"):
        agent_localpart("a" * 81, "b")
    with pytest.raises(ValueError, match="agent id"):
        agent_localpart("a", "b" * 65)


def test_the_operator_never_looks_like_an_agent(settings):
    settings.BEARPIT_OPERATOR_USER = "x=y"
    assert "=" not in operator_localpart()
    assert operator_localpart() != agent_localpart("x", "y")


@pytest.mark.django_db(transaction=True)
@pytest.mark.timeout(120)
def test_look_alike_ids_of_two_realms_get_two_users(homeserver, realm_id, agent_client):
    first = provision_bus(realm_id, [BusAgent("b-c")], turns=False, allow_side_channels=False)
    second_id = f"{realm_id}-b"
    second = provision_bus(second_id, [BusAgent("c")], turns=False, allow_side_channels=False)
    assert first.users["b-c"] != second.users["c"]
    for realm, agent in ((realm_id, "b-c"), (second_id, "c")):
        whoami = agent_client(realm, agent).get("/_matrix/client/v3/account/whoami")
        assert whoami.json()["user_id"] == agent_credentials(realm, agent).mxid
    with matrix_client() as client:
        profile = client.request("GET", f"/_matrix/client/v3/profile/{first.users['b-c']}")
    assert profile["displayname"] == "b-c"


@pytest.mark.django_db(transaction=True)
@pytest.mark.timeout(120)
def test_a_user_owned_by_another_realm_is_refused_before_the_homeserver_is_asked(
    homeserver, realm_id
):
    # A row that claims the user id the new realm's agent would get (an older id scheme,
    # or a restored database): provisioning must stop before touching the homeserver.
    with matrix_client() as client:
        taken = client.mxid(agent_localpart(realm_id, "a"))
    other = BusRealm.objects.create(
        realm_id=f"{realm_id}-other", system_user_id="@bp_system:x", operator_user_id="@op:x"
    )
    BusUser.objects.create(bus=other, agent_id="z", user_id=taken)
    with pytest.raises(ValueError, match=f"{taken}.*already belongs to agent z of realm"):
        provision_bus(realm_id, [BusAgent("a")], turns=False, allow_side_channels=False)
    assert not BusRealm.objects.filter(realm_id=realm_id).exists()
    with matrix_client() as client:
        # The application service may act only as users it registered.
        acting = client._http.get("/_matrix/client/v3/account/whoami", params={"user_id": taken})
    assert acting.status_code == 403, acting.text
    assert "has not registered this user" in acting.json()["error"]
