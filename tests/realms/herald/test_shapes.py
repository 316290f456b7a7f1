"""Pure parts of the bus: who gets a DM room, how mentions are written, names."""

from __future__ import annotations

from realms.herald.config import normalise_localpart
from realms.herald.directory import BusAgent, agent_localpart, permitted_pairs
from realms.herald.posting import message_content


def test_pairs_need_one_willing_side_and_respect_the_referee():
    agents = [
        BusAgent("a", private_messaging={"enabled": True, "peers": ["c"]}),
        BusAgent("b"),
        BusAgent("c"),
        BusAgent("r", role="referee"),
    ]
    assert permitted_pairs(agents) == [("a", "c")]
    agents[0] = BusAgent("a", private_messaging={"enabled": True, "peers": ["r"]})
    assert permitted_pairs(agents) == []  # peers name the referee, but no include_referee
    agents[0] = BusAgent(
        "a", private_messaging={"enabled": True, "peers": ["r"], "include_referee": True}
    )
    assert permitted_pairs(agents) == [("a", "r")]


def test_mentions_are_named_in_the_body_and_listed():
    content = message_content("your turn", ["@bp_x-a:hs"])
    assert content["body"] == "@bp_x-a:hs your turn"
    assert content["m.mentions"] == {"user_ids": ["@bp_x-a:hs"]}
    assert 'href="https://matrix.to/#/@bp_x-a:hs"' in content["formatted_body"]
    plain = message_content("<b>hi</b>")
    assert plain["m.mentions"] == {} and "formatted_body" not in plain
    already = message_content("@bp_x-a:hs, go", ["@bp_x-a:hs"], notice=True)
    assert already["body"] == "@bp_x-a:hs, go" and already["msgtype"] == "m.notice"


def test_localparts_are_matrix_legal():
    assert normalise_localpart("Über Agent#1") == "_ber_agent_1"
    assert agent_localpart("chess-1a2b3c", "white") == "bp_chess-1a2b3c=white"
