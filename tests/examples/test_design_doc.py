"""examples/design-doc: no turns, section files in a shared folder, outputs, a verdict."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from tests.e2e.test_mechanics_run import assert_clean_ending, run_realm

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "design-doc"
AUTHORS = ("alerts", "gauges", "ops")
ALL_THREE = "Sections now: alerts.md, gauges.md, ops.md.\n"
SEVERE_DRAFT = (
    "> SEVERE FLOOD WARNING, River Tarrow at Mill Bridge: 2.7 m and rising. Danger to life. "
    "Leave low ground now and follow the police. Updates at tarrow.gov.uk/flood. Reply STOP to end."
)
SEVERE_FINAL = (
    "> SEVERE FLOOD WARNING, River Tarrow at Mill Bridge: 2.7 m and rising. Danger to life: "
    "leave low ground now. tarrow.gov.uk/flood. Reply STOP to end."
)


def test_design_doc_is_written_in_parallel_checked_and_shipped(tmp_path: Path) -> None:
    run = run_realm(tmp_path, EXAMPLE, timeout=150)
    assert_clean_ending(run, "referee_verdict")
    chron = run.chron

    # No turns: nobody is granted a floor, the kickoff addresses everyone at once, and the
    # three drafts are written side by side, each into its author's own file.
    assert run.turns() == [] and chron.kinds("turn") == []
    (kickoff,) = [b for b in run.system_posts() if "Welcome to the realm" in b]
    assert all(f"={agent}:" in kickoff for agent in (*AUTHORS, "editor"))
    results = [(r["agent"], r["exit_code"], r["output"]) for r in chron.kinds("exec_result")]
    assert all(code == 0 for _agent, code, _out in results), results
    drafts = results[:3]
    assert sorted(agent for agent, _code, _out in drafts) == list(AUTHORS)
    for agent, _code, out in drafts:
        assert out.startswith(f"sections/{agent}.md: ") and f"{agent}.md" in out.split("now: ")[1]
    # Whoever wrote last saw all three (not necessarily the last result recorded), and the
    # editor started from that report.
    complete = [out for _agent, _code, out in drafts if out.endswith(ALL_THREE)]
    assert complete, drafts
    assert [b for b in run.said("editor") if "the three drafts are in" in b] == [
        "@ops the three drafts are in: check your cost against the alert messages before you "
        "assemble."
    ]
    assert [agent for agent, _code, _out in results[3:]] == [
        "editor",
        "ops",
        "alerts",
        "ops",
        "editor",
    ]

    # The review found a real clash, from the file: the severe warning took two segments,
    # which broke the budget; alerts shortened it in its own file and ops priced it again.
    assert results[4][2] == (
        "message lengths [158, 179]; 2 segment(s) each; £3,276.00 a year against £2,000.00\n"
    )
    assert "179 characters" in run.said("ops")[1] and "£3,276.00" in run.said("ops")[1]
    assert results[5][2] == "158 and 146 characters\n"
    assert results[6][2].endswith("; 1 segment(s); £1,638.00 a year\n")
    assert results[7][2].startswith(
        "{'title': True, 'sections': True, 'messages fit': True, 'cost': True}"
    )

    # The editor's verdict ended the realm, after its own check of the file.
    (verdict,) = chron.kinds("verdict")
    assert verdict["outcome"] == "shipped: the Tarrow flood-warning design"
    assert verdict["issued_by"] == "editor" and verdict["final"] is True
    assert chron.kinds("score") == [] and chron.kinds("elimination") == []
    checked, ruled, ended = run.order(
        ("exec_result", {"agent": "editor", "output": results[7][2]}),
        ("verdict", {}),
        ("lifecycle", {"event": "concluding"}),
    )
    assert checked < ruled < ended

    # spec.outputs: design.md and the three section files, as they stood at the end, are in
    # the archive, each with an output event giving its size and digest.
    outputs = run.realm_dir / "outputs"
    captured = {
        path: (outputs / path).read_text(encoding="utf-8")
        for path in ("design.md", *(f"sections/{a}.md" for a in AUTHORS))
    }
    assert chron.kinds("output") == [
        {
            "path": path,
            "bytes": len(text.encode()),
            "sha256": hashlib.sha256(text.encode()).hexdigest(),
        }
        for path, text in captured.items()
    ]
    design = captured["design.md"]
    assert design.startswith("# Tarrow flood warnings: design\n\n## Readings (gauges)\n")
    headings = [line for line in design.splitlines() if line.startswith("## ")]
    assert headings == ["## Readings (gauges)", "## Alerts (alerts)", "## Operations (ops)"]
    # design.md is exactly the three final section files, in order.
    sections = [captured[f"sections/{a}.md"].strip() for a in ("gauges", "alerts", "ops")]
    assert design == "# Tarrow flood warnings: design\n\n" + "\n\n".join(sections) + "\n"
    assert "4,905,600 records, about 157 MB" in design
    assert SEVERE_FINAL in design.splitlines() and SEVERE_DRAFT not in design
    assert max(len(line) - 2 for line in design.splitlines() if line.startswith("> ")) <= 160
    ops = captured["sections/ops.md"]
    assert "The longest alert is 158 characters, so each message is one segment." in ops
    assert "at one segment, come to" not in ops and "come to £1,638.00 a year" in ops
