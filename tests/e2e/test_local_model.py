"""A realm on a real local model: ``pit_up`` with the `local` provider and SmolLM2-135M.

Nothing is scripted: the embedded platform serves the GGUF file with llama.cpp, every
model call goes through the real gateway (metered with the server's own token counts),
the agent's constrained JSON tool call runs in realmtools, and the realm ends by one of
its termination rules. A 135M model decides what it says, so the test asserts what must
hold whatever it says, and reports which rule ended the realm.
"""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest

from tests.e2e.pitrun import (
    REPO,
    free_port,
    leftover_pids,
    pit_env,
    read_chronicle,
    start_pit,
    stop_everything,
)
from tests.fixtures.local_model import smollm2_path

pytestmark = [pytest.mark.slow, pytest.mark.timeout(540)]

PACKAGE = REPO / "tests" / "e2e" / "packages" / "ember"


def _llama_pids(port: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if "ledger.local_llama" in cmd and f"--port {port} " in cmd:
            found.append(int(entry.name))
    return found


def _port_free(port: int) -> bool:
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def test_a_realm_runs_end_to_end_on_a_real_local_model(tmp_path: Path) -> None:
    home = tmp_path / "home"
    log = tmp_path / "pit_up.log"
    port = free_port()
    env = pit_env(
        home,
        BEARPIT_PROVIDER="local",
        BEARPIT_LOCAL_MODEL=str(smollm2_path()),
        BEARPIT_LOCAL_PORT=str(port),
        # Two shared cores: one thread is faster than two fighting other work; greedy
        # sampling keeps the small model on the prompt's instruction.
        BEARPIT_LOCAL_THREADS="1",
        BEARPIT_LOCAL_TEMPERATURE="0",
        BEARPIT_LOCAL_MAX_TOKENS="128",
    )
    began = time.monotonic()
    proc = start_pit(["pit_up", str(PACKAGE)], env, log)
    try:
        code = proc.wait(timeout=480)
        left = leftover_pids(home)
        llama_left = _llama_pids(port)
    finally:
        stop_everything(home, proc)
    out = log.read_text(encoding="utf-8")
    print(f"pit_up ember on SmolLM2 took {time.monotonic() - began:.0f}s")
    assert code == 0, out
    # The package has one agent: the server gets one slot, not the most allowed.
    assert "starting the local model server (SmolLM2-135M-Instruct.Q4_1.gguf, 1 slot)" in out, out

    chron = read_chronicle(home)
    (realm,) = chron.realms
    assert realm["state"] == "archived", out
    (key,) = chron.kinds("key")
    assert key["provider"] == "local" and key["model"] == "SmolLM2-135M-Instruct.Q4_1"
    assert key["transport"] == "openai"

    traces = [p for p in chron.kinds("trace") if p["agent_id"] == "reader"]
    responses = [t["data"] for t in traces if t["type"] == "model_response"]
    spends = chron.kinds("spend")
    # Every call was answered by the model and metered once, with the server's own counts.
    assert responses, out
    assert not [t for t in traces if t["type"] == "provider_error"], traces
    # (A call still in flight when the realm ends is metered without a response.)
    assert len(spends) - len(responses) in (0, 1), (spends, responses)
    assert [(s["tokens_in"], s["tokens_out"]) for s in spends[: len(responses)]] == [
        (r["usage"]["prompt_tokens"], r["usage"]["completion_tokens"]) for r in responses
    ]
    assert all(s["tokens_in"] > 100 and s["tokens_out"] > 0 for s in spends), spends
    assert all(s["provider"] == "local" for s in spends if "provider" in s)

    # A constrained JSON tool call reached realmtools, and its result went back to the model.
    # Realmtools verbs are the only tools the agent has (run_start lists them).
    (start,) = [t["data"] for t in traces if t["type"] == "run_start"]
    results = [t["data"] for t in traces if t["type"] == "tool_result"]
    order = [t["type"] for t in traces]
    assert results, order
    assert all(r["name"] in start["tools"] for r in results), results
    assert any(r["outcome"] == "success" for r in results), results
    # Each call the model made came out of its constrained JSON reply.
    assert all(r["id"].startswith("json_") for r in results), results
    first_result = order.index("tool_result")
    assert "model_request" in order[first_result:], order
    asked_after = next(t["data"] for t in traces[first_result:] if t["type"] == "model_request")
    assert asked_after["messages"] > 2

    # The realm ended by one of its own rules; which one is up to the model.
    (concluding,) = [p for p in chron.kinds("lifecycle") if p["event"] == "concluding"]
    reason = concluding["reason"]
    print(f"ember ended by {reason}: {concluding.get('detail')}")
    assert reason in ("message", "stall", "duration"), concluding
    said = [body for agent, body, _eid in chron.messages if agent == "reader"]
    if reason == "message":
        assert any("amber" in body for body in said), said
    else:
        assert not any("amber" in body for body in said), said
    # The platform stopped what it started, the model server included.
    assert left == [] and llama_left == []
    assert _port_free(port)
