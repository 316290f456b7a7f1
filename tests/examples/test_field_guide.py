"""examples/field-guide: a team plans on the task board, claims, delivers files, and the
realm ends when every task is done."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.test_mechanics_run import assert_clean_ending, run_realm

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "field-guide"

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]


def test_field_guide_is_planned_claimed_and_delivered_through_the_board(tmp_path: Path) -> None:
    run = run_realm(tmp_path, EXAMPLE, timeout=150)
    assert_clean_ending(run, "tasks_complete")
    tasks = [(t["op"], t["task"], t["agent"]) for t in run.chron.kinds("task")]
    # lead plans all three; the chain runs in dependency order, each task claimed once.
    assert tasks == [
        ("add", 1, "lead"),
        ("add", 2, "lead"),
        ("add", 3, "lead"),
        ("claim", 1, "ana"),
        ("complete", 1, "ana"),
        ("claim", 2, "ben"),
        ("complete", 2, "ben"),
        ("claim", 3, "lead"),
        ("complete", 3, "lead"),
    ]
    adds = [t for t in run.chron.kinds("task") if t["op"] == "add"]
    assert [a["depends_on"] for a in adds] == [[], [1], [1, 2]]

    # The files were written in the shared folder and captured as the realm's outputs.
    outputs = run.realm_dir / "outputs" / "guide"
    assert sorted(p.name for p in outputs.iterdir()) == ["index.md", "reeds.md", "waders.md"]
    index = (outputs / "index.md").read_text()
    assert index == "# Birds of Harrow Marsh\n\n- [reeds.md](reeds.md)\n- [waders.md](waders.md)\n"
    assert (outputs / "reeds.md").read_text().count("## ") == 3

    # The report's board section says who delivered what.
    assert "## Task board\n3 of 3 tasks done." in run.out
    assert "- 3. index.md — done by lead: index.md lists reeds.md, waders.md" in run.out
    assert "concluding: tasks_complete — all 3 tasks on the board are done" in run.out
