from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from runtime.birth import BirthConfig
from runtime.hooks import Hooks
from runtime.loop import AgentLoop
from runtime.model import ModelClient
from runtime.tools import ToolDefinition, ToolRegistry
from runtime.trace import Redactor, TraceWriter, TranscriptWriter
from tests.runtime.provider import ScriptedProvider, serve

VIRTUAL_KEY = "vk-test-9f8e7d6c5b4a39281706"


def birth(tmp_path: Path, socket: Path, **overrides: Any) -> BirthConfig:
    home = tmp_path / "home"
    data: dict[str, Any] = {
        "run_id": "run-1",
        "agent_id": "pong",
        "model": {
            "base_url": "http://gateway/v1",
            "socket_path": str(socket),
            "api_key": VIRTUAL_KEY,
            "name": "scripted-model",
            "context_length": 8000,
        },
        "system_prompt": "You are pong.",
        "workspace": str(home),
        "state_dir": str(home / ".bearpit"),
        "trace_path": str(home / ".bearpit" / "trace.jsonl"),
        "transcript_path": str(home / ".bearpit" / "transcript.jsonl"),
    }
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(data.get(key), dict):
            data[key] = {**data[key], **value}
        else:
            data[key] = value
    return BirthConfig.model_validate(data)


@pytest.fixture
def short_tmp() -> Iterator[Path]:
    # Unix socket paths are limited to ~108 bytes; pytest's tmp paths can be longer.
    path = Path(tempfile.mkdtemp(prefix="rt-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def make_loop(
    config: BirthConfig, tools: Sequence[ToolDefinition] = (), hooks: Hooks | None = None
) -> AgentLoop:
    redact = Redactor(config.secrets())
    trace = TraceWriter(Path(config.trace_path), config.run_id, config.agent_id, redact)
    transcript = TranscriptWriter(Path(config.transcript_path), redact)
    registry = ToolRegistry(config.tools_allow, config.limits.tool_timeout_s)
    for tool in tools:
        registry.add_builtin(tool)
    model = ModelClient(config.model, config.limits, trace)
    prompt = config.system_prompt or "system"
    return AgentLoop(config, model, registry, hooks or Hooks(), trace, transcript, prompt)


def trace_events(config: BirthConfig) -> list[dict[str, Any]]:
    lines = Path(config.trace_path).read_text().splitlines()
    return [json.loads(line) for line in lines]


@pytest.fixture
async def provider(short_tmp: Path):
    scripted = ScriptedProvider()
    sock = short_tmp / "gw.sock"
    async with serve(scripted.app(), uds=sock):
        scripted.socket = sock  # type: ignore[attr-defined]
        yield scripted
