"""Loop and echo detection, the pure part: normalising, similarity, the per-agent window."""

from __future__ import annotations

from typing import Any

from realms.plan import LoopsPlan, RealmPlan
from realms.warden import loops
from realms.warden.loops import Called, Spoken

PLAN = LoopsPlan(window=4, threshold=0.85, repeats=3, action="conclude")


def say(ref: int, agent: str, body: str) -> Spoken:
    return Spoken(ref, 1000 + ref, agent, body)


def call(ref: int, agent: str, name: str, arguments: Any) -> Called:
    return Called(ref, 1000 + ref, agent, name, arguments)


def test_normalising_drops_case_punctuation_spacing_and_mentions() -> None:
    assert loops.normalise("  We SHOULD wait,   and see!! @dove:bearpit.local") == (
        "we should wait and see"
    )
    assert loops.normalise("...!?") == ""


def test_similarity_tells_near_repeats_from_new_words() -> None:
    a = loops.normalise("I still think we should wait and see what happens.")
    b = loops.normalise("I still think we should wait and see what happens next.")
    c = loops.normalise("Seventeen goats arrived by train this morning.")
    assert loops.similarity(a, a) == 1.0
    assert loops.similarity(a, b) >= 0.85
    assert loops.similarity(a, c) < 0.5
    assert loops.similarity(a, "") == 0.0


def test_the_third_near_repeat_in_the_window_is_a_loop_with_its_evidence() -> None:
    cursors: dict[str, Any] = {}
    first = [say(1, "hawk", "We should wait and see."), say(2, "hawk", "we should WAIT, and see")]
    assert loops.watch(PLAN, cursors, first, []) == []
    # The window is kept in the cursors between ticks: the next tick sees only the new row.
    (found,) = loops.watch(PLAN, cursors, [say(5, "hawk", "We should wait and see!")], [])
    assert found.agent == "hawk" and found.what == "messages"
    assert [a.ref for a in found.acts] == [1, 2, 5]
    assert found.detail.startswith("hawk repeated itself: 3 near-identical messages")
    assert "#1, #2, #5" in found.detail
    event = found.event("conclude")
    assert event["refs"] == [1, 2, 5] and event["action"] == "conclude"
    # After a loop the agent's window starts afresh.
    assert loops.watch(PLAN, cursors, [say(6, "hawk", "We should wait and see.")], []) == []


def test_repeats_must_fall_within_the_window() -> None:
    cursors: dict[str, Any] = {}
    rows = [
        say(1, "hawk", "We should wait and see."),
        say(2, "hawk", "Let us count the sheep in the field."),
        say(3, "hawk", "Blue is a colour, red is another."),
        say(4, "hawk", "We should wait and see."),
        say(5, "hawk", "Seventeen goats arrived by train."),
        # window 4: message 1 has left it, so this is only the second repeat in view
        say(6, "hawk", "We should wait and see."),
    ]
    assert loops.watch(PLAN, cursors, rows, []) == []


def test_windows_are_per_agent_and_a_row_seen_twice_counts_once() -> None:
    cursors: dict[str, Any] = {}
    text = "We should wait and see."
    rows = [say(1, "hawk", text), say(2, "dove", text), say(3, "hawk", text)]
    assert loops.watch(PLAN, cursors, rows, []) == []
    # A Stream's look-back may hand the same rows over again: they are not new repeats.
    assert loops.watch(PLAN, cursors, rows, []) == []
    (found,) = loops.watch(PLAN, cursors, [say(4, "dove", text), say(7, "dove", text)], [])
    assert found.agent == "dove" and [a.ref for a in found.acts] == [2, 4, 7]


def test_identical_tool_calls_loop_and_different_arguments_do_not() -> None:
    cursors: dict[str, Any] = {}
    calls = [
        call(10, "hawk", "recall", '{"key": "x", "n": 1}'),
        call(11, "hawk", "recall", '{"n": 1, "key": "x"}'),  # same arguments, other order
        call(12, "hawk", "recall", '{"key": "y", "n": 1}'),
    ]
    assert loops.watch(PLAN, cursors, [], calls) == []
    (found,) = loops.watch(PLAN, cursors, [], [call(13, "hawk", "recall", {"key": "x", "n": 1})])
    assert found.what == "tool_calls" and [a.ref for a in found.acts] == [10, 11, 13]
    assert "3 identical tool calls" in found.detail
    assert found.nudge_text().startswith("hawk, you have made the same call recall(")


def test_system_posts_and_empty_messages_are_never_counted() -> None:
    cursors: dict[str, Any] = {}
    rows = [say(i, "", "REALM_ENDING soon") for i in range(5)] + [
        say(10 + i, "hawk", "!!!") for i in range(5)
    ]
    assert loops.watch(PLAN, cursors, rows, []) == []


def test_a_threshold_of_one_takes_only_exact_repeats() -> None:
    strict = LoopsPlan(window=6, threshold=1.0, repeats=3, action="nudge")
    cursors: dict[str, Any] = {}
    rows = [
        say(1, "hawk", "I still think we should wait and see what happens."),
        say(2, "hawk", "I still think we should wait and see what happens next."),
        say(3, "hawk", "I still think we should wait and see what happens."),
    ]
    assert loops.watch(strict, cursors, rows, []) == []
    (found,) = loops.watch(strict, cursors, [say(4, "hawk", rows[0].body)], [])
    assert [a.ref for a in found.acts] == [1, 3, 4]
    assert loops.first_ending([found], strict) is None
    assert loops.first_ending([found], PLAN) is found


def test_the_plan_reads_spec_loops_and_defaults_to_off() -> None:
    assert RealmPlan.parse({"spec": {}}, {}).loops is None
    plan = RealmPlan.parse({"spec": {"loops": {"action": "conclude", "window": 8}}}, {}).loops
    assert plan == LoopsPlan(window=8, threshold=0.9, repeats=3, action="conclude")
