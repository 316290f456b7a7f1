"""Schedules and background jobs end to end: an idle agent is woken by its job's end and
by its schedule, on the offline provider through the real gateway, bus and sandbox."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.test_mechanics_run import assert_clean_ending, run_realm

pytestmark = [pytest.mark.slow, pytest.mark.timeout(150)]


def test_a_jobs_end_and_a_due_schedule_wake_an_idle_agent(tmp_path: Path) -> None:
    run = run_realm(tmp_path, "alarm")
    assert_clean_ending(run, "file")
    chron = run.chron

    # The job ran in the background, as run_code runs, and ended once.
    execs = chron.kinds("exec")
    assert execs[0]["background"] is True and execs[0]["job"] == 1
    jobs = chron.kinds("job")
    ends = {j["job"]: j["state"] for j in jobs if j["op"] == "end"}
    # Job 2 was still simmering when the realm ended: the teardown killed it, and no
    # process of the realm is left (assert_clean_ending).
    assert [j["job"] for j in jobs if j["op"] == "start"] == [1, 2]
    assert ends == {1: "done", 2: "killed"}
    results = [r for r in chron.kinds("exec_result") if r.get("job") == 1]
    assert [(r["exit_code"], r["output"]) for r in results] == [(0, "brewed: 42\n")]

    wakes = chron.kinds("wake")
    by_source = {
        source: [w["op"] for w in wakes if w["source"] == source] for source in ("job", "schedule")
    }
    # Each was due once and posted once; the job's wake was read by the agent's runtime
    # (its trace shows the turn and the model's answer) in time to be acknowledged.
    assert by_source["job"][:3] == ["due", "deliver", "ack"]
    assert by_source["schedule"].count("due") == 1
    assert by_source["schedule"].count("deliver") == 1
    posts = run.system_posts()
    job_post = next(p for p in posts if "your background job 1 ended" in p)
    assert "exit code 0" in job_post and "brewed: 42" in job_post
    assert any('your schedule 1 (after 20s) is due. Your own note: "check the kettle"' in p
               for p in posts)  # fmt: skip
    # The agent acted on both wakes: it read the job's output, then wrote the report.
    called = [t["data"].get("name") for t in chron.kinds("trace") if t.get("type") == "tool_call"]
    assert called == ["run_code", "run_code", "schedule", "job_output", "run_code"]
    text = (run.realm_dir / "archive" / "report.md").read_text(encoding="utf-8")
    assert "## Schedules" in text and "1. keeper, after 20s: check the kettle — due 1" in text
    assert "## Background jobs" in text and "1. keeper: exit code 0" in text
    assert "2. keeper: killed" in text
