"""The reactive referee's round cue: a gated referee learns the round from it alone."""

from __future__ import annotations

from realms.warden.turns import Post, TurnConfig, TurnManager


def test_reactive_round_cue_carries_the_rounds_messages() -> None:
    tm = TurnManager.create(
        TurnConfig(participants=["ping", "pong"], referee="umpire", referee_cue="round")
    )
    tm.start(0)
    tm.observe("ping", "the lamp went dark at nine", 1)
    wrap = tm.observe("pong", "and the gulls fell silent", 2)
    (cue,) = [a for a in wrap if isinstance(a, Post)]
    assert cue.mentions == ("umpire",)
    lines = cue.text.splitlines()
    assert lines[0].startswith("@umpire Round 1 is complete.")
    assert lines[1:] == [
        "This round's messages:",
        "[ping] the lamp went dark at nine",
        "[pong] and the gulls fell silent",
    ]


def test_a_round_nobody_spoke_in_says_so() -> None:
    tm = TurnManager.create(
        TurnConfig(
            participants=["ping"], referee="umpire", referee_cue="round", silence_timeout_s=30
        )
    )
    tm.start(0)
    wrap = tm.tick(31)
    (cue,) = [a for a in wrap if isinstance(a, Post)]
    assert cue.text.splitlines()[1:] == ["This round's messages:", "(none)"]
