"""beacon-brief: no referee, turns with no cue, a brief co-written in the shared folder
through run_code, ended by the ``file`` condition on its final line."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.compat_runs.corpus import run_corpus_package
from tests.e2e.test_mechanics_run import assert_clean_ending

pytestmark = [pytest.mark.compat, pytest.mark.slow, pytest.mark.timeout(180)]

SEATS = ("mira", "orin", "vela")


def test_beacon_brief_ends_when_the_brief_is_marked_final(tmp_path: Path) -> None:
    run = run_corpus_package(tmp_path, "beacon-brief", timeout=150)
    assert_clean_ending(run, "file")
    chron = run.chron

    # Nobody referees: no verdict, no scores, no round cues.
    running = chron.kinds("lifecycle")[1]
    assert running["config"]["referee"] is None
    assert chron.kinds("verdict") == [] and chron.kinds("score") == []
    assert not [b for b in run.system_posts() if "is complete" in b]
    (concluding,) = [p for p in chron.kinds("lifecycle") if p["event"] == "concluding"]
    assert concluding["detail"] == "1 file(s) match *brief.md: brief.md"

    # Seven turns in roster order; the realm ended on mira's first turn of round 3.
    grants = [(t["round"], t["current"]) for t in run.turns()]
    assert grants == [(r, s) for r in (1, 2) for s in SEATS] + [(3, "mira")]

    # Every touch of the file went through run_code in the writer's own sandbox, each on
    # its own turn: the outline, the body, then the final line.
    results = [(r["agent"], r["exit_code"], r["output"]) for r in chron.kinds("exec_result")]
    assert [(agent, code) for agent, code, _out in results] == [
        ("mira", 0),
        ("orin", 0),
        ("vela", 0),
        ("mira", 0),
        ("orin", 0),
        ("vela", 0),
        ("mira", 0),
    ]
    outputs = [out for _agent, _code, out in results]
    assert outputs[:3] == ["[]\n", "False\n", "created 9 lines\n"]
    assert "## The question\n\n## Why a monolith first" in outputs[3]  # the bare outline
    assert outputs[4:] == ["138 words\n", "138 words; 0 empty sections\n", "138 words\nfinalised\n"]
    for exec_id, grant in zip(
        [r["id"] for r in chron.kinds("exec_result")], [g for g in run.turns()], strict=True
    ):
        ran, granted_at = run.order(("exec", {"id": exec_id}), ("turn", grant))
        assert granted_at < ran, (grant, exec_id)

    # Two signatures (the message condition wanted three), then the file ended it.
    signed = [who for who, body, _eid in chron.messages if body == "✅ SIGNED"]
    assert signed == ["orin", "vela"]
    # The run that wrote the final line began before the end. Its result may be recorded
    # just after: a Warden tick can see the file while run_code is still returning.
    (final,) = [r for r in chron.kinds("exec_result") if r["output"] == "138 words\nfinalised\n"]
    final_write, ended = run.order(
        ("exec", {"id": final["id"]}), ("lifecycle", {"event": "concluding"})
    )
    assert final_write < ended
    # The brief is not a declared output: nothing is captured.
    assert chron.kinds("output") == []
