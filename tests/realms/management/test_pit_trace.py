"""``pit_trace`` on a realm that ran: the agents' trace records, read from the Chronicle
after teardown (the sandboxes and their trace files are gone by then)."""

from __future__ import annotations

import json
import re

import pytest

from tests.realms.management.ranrealm import RanRealm

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

LINE = re.compile(r"^\[\d\d:\d\d:\d\d\] (ping|pong|umpire) ([a-z_]+) ?(.*)$")


def lines(done: object) -> list[str]:
    assert getattr(done, "returncode", None) == 0, getattr(done, "stderr", "")
    return str(getattr(done, "stdout", "")).splitlines()


def test_the_last_records_are_each_agents_run_end(toolcheck_realm: RanRealm) -> None:
    out = lines(toolcheck_realm.manage("pit_trace", "-r", toolcheck_realm.realm_id, "-n", "5"))
    assert len(out) == 5, out
    assert all(LINE.match(line) for line in out), out
    # Each agent's own last record is its run_end (pong's comes early: it is eliminated).
    for agent in ("ping", "pong", "umpire"):
        (last,) = lines(
            toolcheck_realm.manage(
                "pit_trace", "-r", toolcheck_realm.realm_id, "-a", agent, "-n", "1"
            )
        )
        parsed = LINE.match(last)
        assert parsed and parsed.group(1) == agent and parsed.group(2) == "run_end", last
        assert parsed.group(3).startswith('reason="stopped" turns='), last


def test_one_agents_calls_of_one_tool(toolcheck_realm: RanRealm) -> None:
    done = toolcheck_realm.manage(
        "pit_trace", "-r", toolcheck_realm.realm_id, "-a", "ping", "--tool", "submit_sealed"
    )
    out = lines(done)
    assert len(out) == 2, out
    call, result = (LINE.match(line) for line in out)
    assert call and call.group(1) == "ping" and call.group(2) == "tool_call", out
    assert call.group(3).startswith("submit_sealed({"), out
    assert json.loads(call.group(3).removeprefix("submit_sealed(").removesuffix(")"))["round"]
    assert result and result.group(2) == "tool_result", out
    assert re.fullmatch(r"submit_sealed → success, \d+ chars, \d+ ms", result.group(3)), out


def test_only_the_named_tool_of_an_agent_that_used_several(toolcheck_realm: RanRealm) -> None:
    out = lines(
        toolcheck_realm.manage("pit_trace", "-r", toolcheck_realm.realm_id, "--tool", "rule")
    )
    parsed = [LINE.match(line) for line in out]
    assert [(m.group(1), m.group(2)) for m in parsed if m] == [
        ("umpire", "tool_call"),
        ("umpire", "tool_result"),
    ], out
    assert out[0].split(" tool_call ", 1)[1].startswith('rule({"outcome": "ping wins the relay"')


def test_grep_matches_the_whole_record_in_any_case(toolcheck_realm: RanRealm) -> None:
    realm = toolcheck_realm.realm_id
    out = lines(toolcheck_realm.manage("pit_trace", "-r", realm, "-g", "GREEN", "-n", "200"))
    lower = toolcheck_realm.manage("pit_trace", "-r", realm, "-g", "green", "-n", "200")
    assert out == lines(lower)
    assert any("submit_sealed" in line and "green" in line for line in out), out
    everything = lines(toolcheck_realm.manage("pit_trace", "-r", realm, "-n", "1000"))
    assert set(out) < set(everything), "grep keeps some records and drops others"
    nothing = lines(toolcheck_realm.manage("pit_trace", "-r", realm, "-g", "zz-no"))
    assert nothing == ["(no trace records match)"]


def test_full_prints_each_record_whole(toolcheck_realm: RanRealm) -> None:
    out = lines(
        toolcheck_realm.manage("pit_trace", "-r", toolcheck_realm.realm_id, "-n", "1", "--full")
    )
    head = LINE.match(out[0])
    assert head and head.group(2) == "run_end" and head.group(3) == "", out
    assert all(line.startswith("    ") for line in out[1:]), out
    record = json.loads("\n".join(out[1:]))
    assert record["reason"] == "stopped" and isinstance(record["turns"], int), out


def test_without_a_realm_it_reads_the_most_recent(toolcheck_realm: RanRealm) -> None:
    out = lines(toolcheck_realm.manage("pit_trace", "-n", "2"))
    assert out[0] == f"realm: {toolcheck_realm.realm_id} (the most recent; -r picks another)"
    assert len(out) == 3 and all(LINE.match(line) for line in out[1:]), out


def test_pit_trace_through_the_console_script(toolcheck_realm: RanRealm) -> None:
    args = ("-r", toolcheck_realm.realm_id, "-a", "umpire", "-n", "4")
    assert lines(toolcheck_realm.pit("trace", *args)) == lines(
        toolcheck_realm.manage("pit_trace", *args)
    )


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (("-n", "0"), 1, "CommandError: --last: expected a positive number; got 0"),
        (("-r", "nope-000000"), 1, "CommandError: realm 'nope-000000': no such realm"),
        (("--last", "many"), 2, "invalid int value: 'many'"),
    ],
)
def test_bad_arguments_say_so_in_one_line(
    toolcheck_realm: RanRealm, args: tuple[str, ...], code: int, message: str
) -> None:
    done = toolcheck_realm.manage("pit_trace", *args)
    assert done.returncode == code, done.stdout
    assert "Traceback" not in done.stderr
    assert message in done.stderr.strip().splitlines()[-1], done.stderr
    assert done.stdout == ""
