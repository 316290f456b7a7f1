"""examples/cosigned-brief: no referee, a shared file, a ``file`` ending, captured outputs."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from tests.e2e.test_mechanics_run import assert_clean_ending, run_realm

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "cosigned-brief"


def test_cosigned_brief_ends_on_both_signatures_and_is_archived(tmp_path: Path) -> None:
    run = run_realm(tmp_path, EXAMPLE, timeout=150)
    assert_clean_ending(run, "file")
    chron = run.chron

    # Nobody referees: no verdict, no scores, no cues; the realm ends on the file alone.
    assert chron.kinds("verdict") == [] and chron.kinds("score") == []
    assert not [b for b in run.system_posts() if "is complete" in b]
    (concluding,) = [p for p in chron.kinds("lifecycle") if p["event"] == "concluding"]
    assert concluding["detail"] == "1 file(s) match brief.md: brief.md"

    # Four turns, each one run_code on the shared file; iris held back her signature in
    # round 1, so only the fourth write carries both.
    grants = [(t["round"], t["current"]) for t in run.turns()]
    assert grants == [(1, "hale"), (1, "iris"), (2, "hale"), (2, "iris")]
    results = [(r["agent"], r["exit_code"], r["output"]) for r in chron.kinds("exec_result")]
    assert [(agent, code) for agent, code, _out in results] == [
        ("hale", 0),
        ("iris", 0),
        ("hale", 0),
        ("iris", 0),
    ]
    assert [out.split(" words", 1)[0] for _agent, _code, out in results[:3]] == ["93", "161", "173"]
    assert "pays back in 5.0 years" in results[2][2] and "in 8.2 years" in results[2][2]
    assert results[3][2].endswith(
        "{'depot counted': True, 'hale signed': True, 'one page': True}\nsigned\n"
    )
    last_write, ended = run.order(
        ("exec_result", {"agent": "iris", "output": results[3][2]}),
        ("lifecycle", {"event": "concluding"}),
    )
    assert last_write < ended

    # spec.outputs: the brief as signed is in the archive, and its event says so.
    captured = run.realm_dir / "outputs" / "brief.md"
    brief = captured.read_text(encoding="utf-8")
    assert brief.startswith("# Brief: battery buses for route 7\n")
    assert brief.endswith("## Signatures\n\n— signed, hale\n— signed, iris\n")
    assert "(iris to write)" not in brief and "£350,000 charging upgrade brings" in brief
    assert len(brief.split()) <= 400
    assert chron.kinds("output") == [
        {
            "path": "brief.md",
            "bytes": len(brief.encode()),
            "sha256": hashlib.sha256(brief.encode()).hexdigest(),
        }
    ]
