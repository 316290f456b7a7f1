"""triad-build: no turns, everyone hears everything, section files co-written through
run_code, the editor's verdict, and the declared outputs captured into the archive."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from tests.compat_runs.corpus import run_corpus_package
from tests.e2e.test_mechanics_run import assert_clean_ending

pytestmark = [pytest.mark.compat, pytest.mark.slow, pytest.mark.timeout(180)]

ENGINEERS = ("lead", "store", "scale", "review")
OUTPUTS = [
    "design.md",
    "sections/lead.md",
    "sections/review.md",
    "sections/scale.md",
    "sections/store.md",
]


def test_triad_build_ships_the_design_and_captures_it(tmp_path: Path) -> None:
    run = run_corpus_package(tmp_path, "triad-build", timeout=150)
    assert_clean_ending(run, "referee_verdict")
    chron = run.chron

    # No floor control at all: no turn events, nobody muted, the editor hears the Commons.
    assert chron.kinds("turn") == []
    config = chron.kinds("lifecycle")[1]["config"]
    assert config["turns"] is None and config["referee_sees_all"] is True
    assert config["environment"]["shared_folder"] is True

    # Each engineer wrote its own section file in its own sandbox, in the order of work:
    # draft, review, revise, assemble, sign, finalise.
    said = [(who, body.split(":", 1)[0]) for who, body, _eid in chron.messages if who]
    # The editor's first poll runs alongside the signatures, so it is placed by order only.
    assert [m for m in said if m[0] != "editor"] == [
        ("lead", "DRAFT"),
        ("store", "DRAFT"),
        ("scale", "DRAFT"),
        ("review", "DRAFT"),
        ("scale", "REVISED"),
        ("lead", "ASSEMBLED"),
        ("store", "✅ SIGNED"),
        ("scale", "✅ SIGNED"),
        ("review", "✅ SIGNED"),
        ("lead", "✅ SIGNED"),
        ("review", "FINAL"),
    ]
    editor = [i for i, (who, _text) in enumerate(said) if who == "editor"]
    assert [said[i][1] for i in editor] == ["Not ready", "🏁 SHIPPED — URL shortener design"]
    assert said.index(("lead", "ASSEMBLED")) < editor[0] < said.index(("review", "FINAL"))
    assert editor[1] == len(said) - 1
    results = [(r["agent"], r["exit_code"]) for r in chron.kinds("exec_result")]
    assert all(code == 0 for _agent, code in results), results
    assert {agent for agent, _code in results} == {*ENGINEERS, "editor"}
    signed = [who for who, body, _eid in chron.messages if body == "✅ SIGNED"]
    assert signed == ["store", "scale", "review", "lead"]

    # The editor polled twice (remembering the first) and ruled only after the final line.
    polls = [r["output"] for r in chron.kinds("exec_result") if r["agent"] == "editor"]
    assert [p.splitlines()[1] for p in polls] == [
        "first line: # URL shortener: design",
        "first line: STATUS: FINAL",
    ]
    assert [(n["agent"], n["text"]) for n in chron.kinds("note")] == [
        ("editor", "poll 1: no STATUS: FINAL line; no sign-offs yet")
    ]
    (verdict,) = chron.kinds("verdict")
    assert verdict["outcome"] == "Design shipped — signed by lead, store, scale, review"
    assert verdict["issued_by"] == "editor"
    finalised, ruled = run.order(
        ("exec_result", {"agent": "review", "output": "STATUS: FINAL\n"}), ("verdict", {})
    )
    assert finalised < ruled

    # spec.outputs: design.md and every section file, captured as they ended.
    outputs = run.realm_dir / "outputs"
    captured = sorted(p.relative_to(outputs).as_posix() for p in outputs.rglob("*.md"))
    assert captured == OUTPUTS
    assert [o["path"] for o in chron.kinds("output")] == OUTPUTS
    for event in chron.kinds("output"):
        data = (outputs / event["path"]).read_bytes()
        assert event == {
            "path": event["path"],
            "bytes": len(data),
            "sha256": hashlib.sha256(data).hexdigest(),
        }
    design = (outputs / "design.md").read_text(encoding="utf-8")
    assert design.startswith("STATUS: FINAL\n# URL shortener: design\n\n## API\n")
    heads = [line for line in design.splitlines() if line.startswith("## ")]
    assert heads == [
        "## API",
        "## Storage & data model",
        "## Scaling & caching",
        "## Risks & open questions",
    ]
    assert "At an assumed 90% hit ratio" in design  # review's note, revised in
    for engineer in ENGINEERS:
        section = (outputs / "sections" / f"{engineer}.md").read_text(encoding="utf-8")
        assert section in design
