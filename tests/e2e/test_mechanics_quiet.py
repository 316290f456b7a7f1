"""Endings by time: a stalled realm and (in the budgets test) a duration limit."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.test_mechanics_run import assert_clean_ending, run_realm

pytestmark = [pytest.mark.slow, pytest.mark.timeout(150)]


def test_a_realm_gone_quiet_ends_on_its_stall_limit(tmp_path: Path) -> None:
    run = run_realm(tmp_path, "lull")
    assert_clean_ending(run, "stall")
    (detail,) = [p["detail"] for p in run.chron.kinds("lifecycle") if p["event"] == "concluding"]
    assert detail == "no activity for 8s"
    assert run.said("talker") == ["hello, realm"]
    assert run.said("listener") == []
    # Idle time counts from the last agent message; system posts never reset it.
    (hello,) = run.message_ms("talker")
    (concluding,) = run.event_ms("lifecycle", event="concluding")
    assert concluding - hello >= 8000
    # The duration limit (2m) never came near.
    assert run.took < 90
