"""TurnManager: rotation, substantive speech, silence, driving referees, removals."""

from __future__ import annotations

from typing import Any

import pytest

from realms.warden.turns import (
    Action,
    Grant,
    OpenFloor,
    Post,
    TurnConfig,
    TurnEvent,
    TurnManager,
    TurnState,
    is_substantive,
)
from runtime.bus import mentions


def events(actions: list[Action]) -> list[dict[str, Any]]:
    return [a.payload for a in actions if isinstance(a, TurnEvent)]


def grants(actions: list[Action]) -> list[Grant]:
    return [a for a in actions if isinstance(a, Grant)]


def relay(**kw: Any) -> TurnManager:
    config = TurnConfig(participants=["ping", "pong"], referee="umpire", **kw)
    return TurnManager.create(config)


@pytest.mark.parametrize(
    "body",
    [
        "",
        "   \u200b ",
        "⏳ thinking…",
        "🛠 calling submit_sealed",
        "⚙️ working",
        "⚠️ retrying",
        "API call failed after 3 retries",
        "Error: HTTP 429 from provider",
        "Rate limit reached, waiting",
        "Your budget has been exceeded",
        "<tool_call>{}</tool_call>",
        "<call>submit_sealed</call> ok",
    ],
)
def test_it_ignores_non_substantive_posts(body: str) -> None:
    assert not is_substantive(body)


@pytest.mark.parametrize(
    "body",
    [
        "apple -> pear",
        "I think the http protocol is neat, and 404 pages are fun",
        "<call>x</call> and then a real sentence that is long enough to count",
    ],
)
def test_it_counts_real_speech(body: str) -> None:
    assert is_substantive(body)


def test_it_rotates_in_roster_order_and_completes_rounds() -> None:
    tm = TurnManager.create(TurnConfig(participants=["a", "b", "c"], referee_cue="none"))
    first = tm.start(0)
    assert events(first)[0] == {
        "round": 1,
        "order": ["a", "b", "c"],
        "position": 0,
        "current": "a",
        "min_rounds": 0,
    }
    assert grants(first)[0].agent == "a"
    assert tm.observe("b", "out of turn", 1) == []
    assert grants(tm.observe("a", "hello there", 2))[0].agent == "b"
    # A second post by the same sender in the round does not count again.
    assert tm.observe("a", "again", 3) == []
    assert grants(tm.observe("b", "⏳ status", 4)) == []
    assert grants(tm.observe("b", "my turn now", 5))[0].agent == "c"
    wrap = tm.observe("c", "last word", 6)
    assert events(wrap)[0]["event"] == "round_complete"
    assert events(wrap)[0]["completed"] == 1
    assert events(wrap)[1]["round"] == 2
    assert grants(wrap)[0].agent == "a"
    assert tm.state.spoke_this_round == []


def test_grant_carries_the_last_substantive_messages() -> None:
    tm = TurnManager.create(TurnConfig(participants=["a", "b"], referee_cue="none"))
    tm.start(0)
    for i in range(14):
        tm.observe("a" if i % 2 == 0 else "b", f"line   {i}\nwrapped", i + 1)
    grant = grants(tm.observe("a", "x" * 900, 99))
    text = grant[0].text if grant else ""
    assert "line 13 wrapped" in text
    assert "line 2 " not in text  # only the last 12 remain
    assert "x" * 499 + "…" in text and "x" * 500 not in text


def test_driving_referee_opens_and_resolves_each_round() -> None:
    tm = relay(driving=True, min_rounds=1, referee_rules=True)
    opening = tm.start(0)
    assert grants(opening)[0].agent is None
    assert grants(opening)[0].mentions == ("umpire",)
    assert tm.state.awaiting == "opener"
    # A player cannot take the floor before the opener.
    assert tm.observe("ping", "early", 1) == []
    after_opener = tm.observe("umpire", "Round R1 — seed word: kiwi", 2)
    assert grants(after_opener)[0].agent == "ping"
    assert "seed word: kiwi" in grants(after_opener)[0].text
    tm.observe("ping", "kiwi -> mango", 3)
    wrap = tm.observe("pong", "mango -> lime", 4)
    complete = events(wrap)[0]
    assert complete["event"] == "round_complete" and complete["round"] == 2
    cue = grants(wrap)[0]
    assert cue.agent is None
    assert "[ping] kiwi -> mango" in cue.text and "[pong] mango -> lime" in cue.text
    assert "call rule now" in cue.text
    assert tm.state.awaiting == "round"
    # An elimination resolves the boundary and reopens the floor without ping... pong.
    resumed = tm.remove("pong", 5)
    assert events(resumed)[0] == {"event": "removed", "agent": "pong", "by": "referee", "round": 2}
    assert grants(resumed)[0].agent == "ping"
    assert tm.status()["order"] == ["ping"]


def test_reactive_referee_is_cued_without_pausing() -> None:
    tm = relay(referee_cue="round")
    tm.start(0)
    tm.observe("ping", "one", 1)
    wrap = tm.observe("pong", "two", 2)
    posts = [a for a in wrap if isinstance(a, Post)]
    assert posts and "Round 1 is complete" in posts[0].text
    assert grants(wrap)[0].agent == "ping"
    assert tm.state.awaiting is None


def test_turn_cue_names_each_holder() -> None:
    tm = relay(referee_cue="turn")
    posts = [a for a in tm.start(0) if isinstance(a, Post)]
    assert posts[0].text == "@umpire It is now ping's turn (round 1)."


def test_silence_reannounces_then_skips_then_retires() -> None:
    tm = TurnManager.create(
        TurnConfig(
            participants=["a", "b"],
            referee_cue="none",
            silence_timeout_s=60,
            retire_after_misses=2,
        )
    )
    tm.start(0)
    assert tm.tick(10) == []
    nag = tm.tick(30)
    assert isinstance(nag[0], Post) and "still your turn" in nag[0].text
    assert tm.tick(40) == []  # re-announce no more often than max(20, timeout/2)
    skipped = tm.tick(60)
    assert events(skipped)[0] == {"event": "skipped", "agent": "a", "round": 1}
    assert grants(skipped)[0].agent == "b"
    tm.observe("b", "here", 61)  # wraps to round 2, a again
    second = tm.tick(121)
    assert {"event": "retired", "agent": "a", "round": 2} in events(second)
    assert grants(second)[0].agent == "b"
    # b goes silent twice too: everybody is gone, the floor opens.
    tm.tick(181)
    final = tm.tick(241)
    assert any(isinstance(a, OpenFloor) for a in final)
    assert tm.state.floor_open


def test_referee_timeout_resumes_the_rotation() -> None:
    tm = relay(driving=True, silence_timeout_s=30)
    tm.start(0)
    out = tm.tick(31)
    assert events(out)[0] == {"event": "referee_timeout", "awaiting": "opener", "round": 1}
    assert grants(out)[0].agent == "ping"


def test_removing_the_last_holder_wraps_the_lap() -> None:
    tm = relay(referee_cue="none")
    tm.start(0)
    tm.observe("ping", "one", 1)
    out = tm.remove("pong", 2)
    kinds = [e.get("event") for e in events(out)]
    assert kinds[:2] == ["removed", "round_complete"]
    assert grants(out)[0].agent == "ping"


def test_state_round_trips_through_json() -> None:
    tm = relay(driving=True)
    tm.start(0)
    tm.observe("umpire", "go", 1)
    restored = TurnManager(TurnState.from_json(tm.state.to_json()))
    assert restored.state == tm.state
    assert grants(restored.observe("ping", "apple -> fig", 2))[0].agent == "pong"


def test_a_platform_removal_never_resolves_the_referees_boundary() -> None:
    tm = relay(driving=True)
    tm.start(0)
    tm.observe("umpire", "go", 1)
    out = tm.remove("ping", 2, by="platform")  # ping's budget ran out while holding the floor
    assert events(out)[0] == {"event": "removed", "agent": "ping", "by": "platform", "round": 1}
    assert grants(out)[0].agent == "pong"
    wrap = tm.observe("pong", "alone now", 3)
    assert tm.state.awaiting == "round" and events(wrap)[0]["order"] == ["pong"]
    assert tm.remove("pong", 4, by="platform")[-1] == OpenFloor()
    assert tm.state.floor_open and tm.state.awaiting is None


def test_quoted_messages_wake_only_the_agent_addressed() -> None:
    """A grant or a cue quotes earlier messages; an @handle in a quote must not make the
    runtime deliver that grant to the agent quoted (it would wake out of turn, each turn)."""
    mxid = "@bp_r=luz:bearpit.local"
    tm = TurnManager.create(
        TurnConfig(participants=["ines", "kofi", "luz"], referee="judge", driving=True)
    )
    tm.start(0)
    opening = grants(tm.observe("judge", "@kofi: who has paid you? @ines, @LUZ and " + mxid, 1))
    text = opening[0].text
    assert opening[0].mentions == ("ines",)
    assert mentions("ines", "@bp_r=ines:bearpit.local", text, {})
    for other in ("kofi", "luz"):
        assert not mentions(other, f"@bp_r={other}:bearpit.local", text, {}), text
    assert "[judge] kofi: who has paid you? ines, LUZ and bp_r=luz:bearpit.local" in text
    tm.observe("ines", "Ask @kofi, not me; mail me at ines@tidewell.example", 2)
    tm.observe("kofi", "Nobody yet.", 3)
    cue = grants(tm.observe("luz", "Thank you @judge.", 4))[0]
    assert cue.mentions == ("judge",)
    assert not mentions("kofi", "@bp_r=kofi:bearpit.local", cue.text, {}), cue.text
    assert "[ines] Ask kofi, not me; mail me at ines@tidewell.example" in cue.text
    # The reactive cue quotes the round the same way.
    reactive = TurnManager.create(TurnConfig(participants=["ines", "kofi"], referee="judge"))
    reactive.start(0)
    reactive.observe("ines", "Over to @kofi.", 1)
    (post,) = [a for a in reactive.observe("kofi", "Thanks.", 2) if isinstance(a, Post)]
    assert "[ines] Over to kofi." in post.text
