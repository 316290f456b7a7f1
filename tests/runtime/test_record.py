"""Strict records (runtime/record.py), through the birth config's own parts."""

from __future__ import annotations

import json

import pytest

from runtime.birth import BirthConfig, Limits, McpServerSettings, ModelSettings, PromptInputs
from runtime.record import RecordError


def minimal() -> dict[str, object]:
    return {
        "run_id": "r1",
        "agent_id": "ping",
        "model": {"base_url": "http://gateway/v1", "api_key": "vk-1", "name": "m"},
        "system_prompt": "You are ping.",
        "workspace": "/home/agent",
        "state_dir": "/home/agent/.bearpit/state",
        "trace_path": "/home/agent/.bearpit/trace.jsonl",
        "transcript_path": "/home/agent/.bearpit/transcript.jsonl",
    }


def problems(data: object) -> dict[str, str]:
    with pytest.raises(RecordError) as caught:
        BirthConfig.model_validate(data)
    return dict(caught.value.problems)


def test_defaults_nested_records_and_round_trip() -> None:
    data = minimal()
    data["mcp_servers"] = [{"name": "realmtools", "socket_path": "/run/bearpit/rt.sock"}]
    data["limits"] = {"max_steps_per_turn": 5, "compaction_trigger": 0.5}
    config = BirthConfig.model_validate(data)
    assert isinstance(config.model, ModelSettings) and config.model.context_length == 128_000
    assert isinstance(config.mcp_servers[0], McpServerSettings)
    assert config.mcp_servers[0].call_timeout_s == 120.0 and config.mcp_servers[0].exclude == []
    assert config.limits.max_steps_per_turn == 5 and config.limits.tool_timeout_s == 120.0
    again = BirthConfig.model_validate(json.loads(config.model_dump_json()))
    assert again == config


def test_every_problem_is_reported_at_once_with_its_path() -> None:
    data = minimal()
    del data["workspace"]
    data["agent_id"] = "Bad Id"
    data["surprise"] = 1
    data["model"] = {"base_url": "ftp://x", "api_key": "", "name": "m", "extra": True}
    data["limits"] = {"max_steps_per_turn": 0, "compaction_trigger": 1.5}
    data["mcp_servers"] = [{"name": "ok"}, {"name": "no spaces allowed"}]
    found = problems(data)
    assert found["workspace"] == "Field required"
    assert found["agent_id"].startswith("String should match pattern")
    assert found["surprise"] == "Extra inputs are not permitted"
    assert found["model.api_key"] == "String should have at least 1 characters"
    assert found["model.extra"] == "Extra inputs are not permitted"
    assert found["limits.max_steps_per_turn"] == "Input should be greater than or equal to 1"
    assert found["limits.compaction_trigger"] == "Input should be less than 1.0"
    assert found["mcp_servers.1.name"].startswith("String should match pattern")


def test_nothing_is_coerced_but_an_int_where_a_number_is_expected() -> None:
    for field, value, message in [
        ("limits", {"max_steps_per_turn": "3"}, "Input should be a valid integer"),
        ("limits", {"max_steps_per_turn": True}, "Input should be a valid integer"),
        ("limits", {"max_steps_per_turn": 2.5}, "Input should be a valid integer"),
        ("limits", {"tool_timeout_s": "9"}, "Input should be a valid number"),
        ("version", True, "Input should be 1"),
        ("tools_allow", "read_file", "Input should be a valid list"),
        ("model", "gpt", "Input should be an object"),
    ]:
        data = minimal()
        data[field] = value
        assert message in problems(data).values(), (field, value)
    data = minimal()
    data["limits"] = {"tool_timeout_s": 9}
    assert BirthConfig.model_validate(data).limits.tool_timeout_s == 9.0
    assert problems([1, 2]) == {"": "Input should be an object"}


def test_checks_across_fields() -> None:
    data = minimal()
    data["prompt"] = {"agent_id": "ping", "mxid": "@ping:bearpit.local"}
    assert "give exactly one of" in problems(data)["prompt"]
    data = minimal()
    data["mcp_servers"] = [{"name": "a"}, {"name": "a"}]
    assert problems(data)["mcp_servers"] == "names must be unique"
    data = minimal()
    data["model"] = {"base_url": "ftp://x", "api_key": "k", "name": "m"}
    assert problems(data)["model.base_url"] == "should start with http:// or https://"


def test_construction_validates_like_loading() -> None:
    with pytest.raises(RecordError, match="max_steps_per_turn: Input should be greater"):
        Limits(max_steps_per_turn=0)
    config = BirthConfig.model_validate(minimal())
    with pytest.raises(RecordError, match="agent_id: String should match pattern"):
        config.model_copy(update={"agent_id": "UPPER"})
    # A nested part may be given as a mapping, as in the parsed file.
    inputs = PromptInputs(agent_id="ping", mxid="@ping:x", roster=[{"id": "pong"}])  # type: ignore[list-item]
    assert inputs.roster[0].id == "pong" and inputs.roster[0].role == "participant"
