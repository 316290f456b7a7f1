"""The kickoff post: what it says, and whom it addresses."""

from __future__ import annotations

import pytest

from realms.plan import plan_of
from realms.services.kickoff import kickoff_mentions, kickoff_text
from tests.fixtures.realms import RealmBuilder

pytestmark = pytest.mark.django_db

ROSTER = [{"id": "ann"}, {"id": "ben"}, {"id": "judge", "role": "referee"}]
TURNS = {"policy": "one-at-a-time", "advance": "one-message", "order": "roster"}


def test_the_kickoff_says_the_name_goals_guidelines_turns_and_referee(
    realm_builder: RealmBuilder,
) -> None:
    realm = realm_builder(
        name="Word Relay",
        agents=ROSTER,
        spec={"goals": ["Pass the word", "Keep it short"], "guidelines": "  One line each.\n"},
    )
    text = kickoff_text(plan_of(realm))
    assert text.splitlines() == [
        "Welcome to the realm “Word Relay”.",
        "Goals:",
        "- Pass the word",
        "- Keep it short",
        "Guidelines:",
        "One line each.",
        "The referee is judge; its tools decide outcomes.",
    ]
    with_turns = kickoff_text(plan_of(realm_builder(agents=ROSTER, spec={"turns": TURNS})))
    assert "Turns: one participant at a time, in roster order." in with_turns
    bare = kickoff_text(plan_of(realm_builder(name="Bare", agents=[{"id": "ann"}])))
    assert bare == "Welcome to the realm “Bare”."


def test_the_kickoff_addresses_everyone_nobody_with_turns_or_the_driving_referee(
    realm_builder: RealmBuilder,
) -> None:
    free = realm_builder(agents=ROSTER)
    assert kickoff_mentions(plan_of(free)) == ["ann", "ben", "judge"]
    turns = realm_builder(agents=ROSTER, spec={"turns": TURNS})
    assert kickoff_mentions(plan_of(turns)) == []
    for spec in ({"referee_opens": True}, {"referee_opens": True, "turns": TURNS}):
        assert kickoff_mentions(plan_of(realm_builder(agents=ROSTER, spec=spec))) == ["judge"]
    # Without a referee there is nobody to drive: everyone is addressed.
    alone = realm_builder(agents=[{"id": "ann"}, {"id": "ben"}], spec={"referee_opens": True})
    assert kickoff_mentions(plan_of(alone)) == ["ann", "ben"]
