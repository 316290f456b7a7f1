"""``manage.py pit_validate PATH``: what a package declares, or every problem at once."""

from __future__ import annotations

import io
import subprocess
import sys

import pytest
from django.core.management import CommandError, call_command

from tests.realms.packages.helpers import COMPAT, REPO, base_project, write_package


def run(*args):
    out, err = io.StringIO(), io.StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


@pytest.mark.compat
def test_validate_prints_the_package():
    out, _ = run("pit_validate", str(COMPAT / "param-relay"))
    lines = out.splitlines()
    assert lines[0] == "Package: param-relay (project.json, bearpit/v1alpha1)"
    assert "  warden  referee      tier medium  tools: -" in lines
    assert "Referee: warden" in lines
    assert "Termination: referee_verdict, duration 60m, stall 20m" in lines
    assert "Tool problems: none" in lines
    assert any(line.startswith("  * team_name (string) = (no default)") for line in lines)
    assert any(line.startswith("    seed_word (string) = 'MANGO' [overridden]") for line in lines)
    assert "Memory: every agent starts fresh (ephemeral)" in lines
    assert lines[-1] == "OK"


@pytest.mark.compat
def test_validate_shows_machine_tools_and_memory_note(tmp_path):
    out, _ = run("pit_validate", str(COMPAT / "poker-table"))
    assert "Mechanics: state-machine (8 states, 16 transitions)" in out
    root = write_package(
        tmp_path / "pkg",
        agents={"solo": {"id": "solo", "tools": ["web_search"], "memory": "persistent"}},
    )
    out, _ = run("pit_validate", str(root))
    assert "Tool problems:\n  agents/solo/agent.json: tools[0]: web_search is not provided" in out
    assert "Memory: persistent memory is not supported; solo start fresh" in out


def test_validate_warns_about_a_configured_tool_nobody_holds(tmp_path):
    # The shape of the reference corpus's market-scan-duel, in a package of our own.
    root = write_package(
        tmp_path / "pkg", project=base_project(tools={"web_fetch": {"max_calls_per_agent": 3}})
    )
    out, _ = run("pit_validate", str(root))
    lines = out.splitlines()
    assert (
        "warning: project.json: spec.tools.web_fetch: configures web_fetch, but no agent is "
        "granted it; the configuration is unused"
    ) in lines
    assert lines[-1] == "OK"


def test_validate_lists_every_error_and_fails(tmp_path):
    root = write_package(
        tmp_path / "pkg",
        agents={"pong": {"id": "pong", "budget": {"on_exhausted": "stop"}, "color": "x"}},
    )
    err = io.StringIO()
    with pytest.raises(CommandError) as caught:
        call_command("pit_validate", str(root), stdout=io.StringIO(), stderr=err)
    assert caught.value.returncode == 1
    assert err.getvalue().splitlines() == [
        'agents/pong/agent.json: color: expected a colour as #RRGGBB; got "x"',
        "agents/pong/agent.json: budget.on_exhausted: expected one of starve, starve_then_kill, "
        'kill; got "stop"',
    ]
    assert "invalid package (2 problems)" in str(caught.value)


@pytest.mark.timeout(60)
def test_validate_subprocess_exit_codes_and_no_traceback(tmp_path):
    junk = tmp_path / "junk.json"
    junk.write_bytes(b"\xff\xfe\x00garbage")
    bad = subprocess.run(
        [sys.executable, "manage.py", "pit_validate", str(junk)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=50,
    )
    assert bad.returncode == 1
    assert "junk.json: is not UTF-8 text" in bad.stderr
    assert "Traceback" not in bad.stderr + bad.stdout
    good = subprocess.run(
        [sys.executable, "manage.py", "pit_validate", str(REPO / "examples" / "toolcheck")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=50,
    )
    assert good.returncode == 0, good.stderr
    assert good.stdout.rstrip().endswith("OK")
