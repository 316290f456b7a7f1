from __future__ import annotations

import pytest

from chronicle import selectors
from chronicle.kinds import Kind
from realms.warden import nudges
from realms.warden.snapshot import build_snapshot
from tests.chronicle.realmkit import event, running, say
from tests.fixtures.realms import build_realm

pytestmark = [pytest.mark.timeout(60), pytest.mark.django_db]

REALM = "nudge-abc123"
T0 = 1_000_000
S = 1000  # ms per second


@pytest.fixture(autouse=True)
def _home(settings, tmp_path):
    settings.BEARPIT_HOME = tmp_path


class Board:
    def __init__(self):
        self.posts: list[tuple[str, list[str]]] = []

    def __call__(self, text: str, mentions: list[str]) -> None:
        self.posts.append((text, mentions))


def setup_realm(*, referee_opens: bool = False):
    build_realm(
        REALM,
        agents=[{"id": "ref", "role": "referee"}, {"id": "alice"}, {"id": "bob"}],
        name="N",
        spec={"referee_opens": referee_opens},
    )
    running(REALM, ts=T0)


def tick(board: Board, now: int, *, enabled: bool = True):
    return nudges.nudge_if_stalled(build_snapshot(REALM, now_ms=now), post=board, enabled=enabled)


def nudge_payloads() -> list[dict[str, object]]:
    return [p for p in selectors.payloads(REALM, Kind.SYSTEM) if p.get("event") == "nudge"]


def test_no_nudge_before_150_seconds_of_no_progress():
    setup_realm()
    board = Board()
    assert tick(board, T0 + 149 * S) is None
    assert board.posts == [] and nudge_payloads() == []


def test_a_stalled_realm_is_nudged_with_everyone_mentioned_and_chronicled():
    setup_realm()
    board = Board()
    nudge = tick(board, T0 + 150 * S)
    assert nudge is not None and nudge.number == 1 and not nudge.referee_only
    assert board.posts == [(nudges.REALM_TEXT, ["ref", "alice", "bob"])]
    assert nudge_payloads() == [{"event": "nudge", "n": 1, "to": ["ref", "alice", "bob"]}]


def test_progress_resets_the_clock_messages_files_and_spend(tmp_path):
    setup_realm()
    board = Board()
    say(REALM, "thinking", T0 + 100 * S, agent="alice", channel="!dm:x")
    assert tick(board, T0 + 200 * S) is None
    event(REALM, Kind.SPEND, {"agent": "bob", "usd": 0.01}, T0 + 180 * S)
    assert tick(board, T0 + 300 * S) is None
    assert tick(board, T0 + 330 * S) is not None  # 150 s after the spend
    # system posts (such as the nudge itself) are not progress; a new shared file is
    shared = tmp_path / "realms" / REALM / "shared"
    shared.mkdir(parents=True)
    (shared / "notes.md").write_text("draft")
    changed = build_snapshot(REALM, now_ms=T0).shared_changed_ms
    assert changed is not None
    assert build_snapshot(REALM, now_ms=T0).last_progress_ms == max(changed, T0 + 180 * S)


def test_nudges_are_spaced_and_capped_at_four():
    setup_realm()
    board = Board()
    sent = []
    now = T0
    for _ in range(10):
        now += 150 * S
        sent.append(tick(board, now))
        # a second tick right after a nudge does not nudge again
        assert tick(board, now + 10 * S) is None
    numbers = [n.number for n in sent if n is not None]
    assert numbers == [1, 2, 3, 4]
    assert len(board.posts) == 4 and len(nudge_payloads()) == 4


def test_a_driving_referee_alone_is_nudged_in_generic_words():
    setup_realm(referee_opens=True)
    board = Board()
    nudge = tick(board, T0 + 151 * S)
    assert nudge is not None and nudge.referee_only
    assert board.posts == [(nudges.REFEREE_TEXT, ["ref"])]
    assert "alice" not in nudges.REFEREE_TEXT and "bob" not in nudges.REFEREE_TEXT


def test_stopped_agents_are_not_mentioned_and_disabled_nudges_never_fire():
    setup_realm()
    event(REALM, Kind.SYSTEM, {"event": "agent_stopped", "agent": "bob"}, T0)
    board = Board()
    assert tick(board, T0 + 500 * S, enabled=False) is None
    assert tick(board, T0 + 500 * S).mentions == ("ref", "alice")


def test_a_post_that_fails_is_not_counted():
    setup_realm()

    def broken(text: str, mentions: list[str]) -> None:
        raise ConnectionError("homeserver down")

    with pytest.raises(ConnectionError):
        nudges.nudge_if_stalled(build_snapshot(REALM, now_ms=T0 + 200 * S), post=broken)
    assert nudge_payloads() == []
