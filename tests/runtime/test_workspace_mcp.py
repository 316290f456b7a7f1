"""MCP servers from the workspace's config file: a real streamable-HTTP server, tools named
``server__tool``, its bearer token read from the environment and never written down."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.runtime import mcp_server
from tests.runtime.provider import ScriptedProvider, call, reply
from tests.runtime.workspace_pty import agent_at, served

pytestmark = pytest.mark.timeout(90)


def test_an_mcp_tool_is_called_under_its_namespaced_name(tmp_path: Path, monkeypatch) -> None:
    calls: list[str] = []
    workspace = tmp_path / "ws"
    (workspace / ".bearpit").mkdir(parents=True)
    provider = ScriptedProvider(
        script=[
            reply(tool_calls=[call("tools__submit_sealed", {"round": "R1", "payload": "teal"})]),
            reply("sealed it"),
        ]
    )
    monkeypatch.setenv("WS_MCP_TOKEN", mcp_server.TOKEN)
    with served(mcp_server.build(calls), lifespan="on") as mcp_base, served(provider.app()) as base:
        config = {
            "mcp_servers": [
                {"name": "tools", "url": f"{mcp_base}/mcp", "bearer_token": "${WS_MCP_TOKEN}"}
            ]
        }
        (workspace / ".bearpit/config.json").write_text(json.dumps(config))
        with agent_at(workspace, tmp_path / "home", base) as agent:
            agent.line("seal teal for R1")
            agent.expect("tools__submit_sealed")
            agent.expect("→ success")
            agent.expect("sealed it")
            agent.line("/quit")
            assert agent.wait() == 0
            output = agent.output

    assert calls == ["submit_sealed:R1:teal"]
    offered = {t["function"]["name"] for t in provider.requests[0]["tools"]}
    assert {"tools__submit_sealed", "tools__slow", "shell", "read_file"} <= offered
    assert "submit_sealed" not in offered  # always namespaced
    assert provider.requests[1]["messages"][-1]["content"] == "sealed for R1"
    trace = (workspace / ".bearpit/trace.jsonl").read_text()
    assert '"state": "up"' in trace
    for text in (output, trace, (workspace / ".bearpit/transcript.jsonl").read_text()):
        assert mcp_server.TOKEN not in text
