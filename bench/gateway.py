"""Benchmark: the Ledger gateway against a direct call and the LiteLLM proxy server.

Run: ``uv run python bench/gateway.py [--requests 2000]``. Starts a tiny mock provider,
our gateway (``pit_gateway`` on a throw-away SQLite home, with auth, reservation and
metering as in production) and the LiteLLM proxy without a database (installed into a
throw-away venv). Prints p50/p99 added latency, throughput and peak RSS of each; the
last line is one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
BODY = json.dumps(
    {"model": "mock", "messages": [{"role": "user", "content": "Say hello."}], "max_tokens": 32}
).encode()
COMPLETION = json.dumps(
    {
        "id": "chatcmpl-mock",
        "object": "chat.completion",
        "created": 0,
        "model": "mock",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "Hello!"},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15},
    }
).encode()


# --- the mock provider: a raw asyncio HTTP/1.1 server with keep-alive --------------------


class _MockProtocol(asyncio.Protocol):
    def __init__(self) -> None:
        self.buf = b""
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buf += data
        while True:
            head_end = self.buf.find(b"\r\n\r\n")
            if head_end < 0:
                return
            head = self.buf[:head_end].decode("latin-1").lower()
            length = 0
            for line in head.split("\r\n"):
                if line.startswith("content-length:"):
                    length = int(line.split(":", 1)[1])
            if len(self.buf) < head_end + 4 + length:
                return
            self.buf = self.buf[head_end + 4 + length :]
            assert self.transport is not None
            self.transport.write(
                b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: "
                + str(len(COMPLETION)).encode()
                + b"\r\n\r\n"
                + COMPLETION
            )


def serve_mock(port: int) -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        server = await loop.create_server(_MockProtocol, "127.0.0.1", port, backlog=1024)
        async with server:
            await server.serve_forever()

    asyncio.run(main())


# --- a lean keep-alive client, so the load generator costs little CPU ---------------------


async def _read_response(reader: asyncio.StreamReader) -> int:
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ")[1])
    length, chunked = None, False
    for line in lines[1:]:
        low = line.lower()
        if low.startswith("content-length:"):
            length = int(line.split(":", 1)[1])
        elif low.startswith("transfer-encoding:") and "chunked" in low:
            chunked = True
    if length is not None:
        await reader.readexactly(length)
    elif chunked:
        while True:
            size = int((await reader.readuntil(b"\r\n")).strip(), 16)
            await reader.readexactly(size + 2)
            if size == 0:
                break
    return status


async def _worker(port: int, auth: str, n: int, lat: list[float], errors: list[int]) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    request = (
        b"POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\n"
        + b"content-type: application/json\r\n"
        + (f"authorization: Bearer {auth}\r\n".encode() if auth else b"")
        + b"content-length: "
        + str(len(BODY)).encode()
        + b"\r\n\r\n"
        + BODY
    )
    for _ in range(n):
        t0 = time.perf_counter()
        writer.write(request)
        status = await _read_response(reader)
        lat.append((time.perf_counter() - t0) * 1000)
        if status != 200:
            errors.append(status)
    writer.close()


async def _load(port: int, auth: str, total: int, concurrency: int) -> dict[str, float]:
    lat: list[float] = []
    errors: list[int] = []
    per = total // concurrency
    t0 = time.perf_counter()
    await asyncio.gather(*(_worker(port, auth, per, lat, errors) for _ in range(concurrency)))
    elapsed = time.perf_counter() - t0
    lat.sort()
    return {
        "p50_ms": statistics.median(lat),
        "p99_ms": lat[int(len(lat) * 0.99) - 1],
        "rps": len(lat) / elapsed,
        "errors": len(errors),
        "first_error": errors[0] if errors else 0,
    }


def run_load(port: int, auth: str, total: int, concurrency: int) -> dict[str, float]:
    asyncio.run(_load(port, auth, min(200, total), concurrency))  # warm-up
    return asyncio.run(_load(port, auth, total, concurrency))


# --- processes ---------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_port(port: int, proc: subprocess.Popen[bytes], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"process exited with {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"nothing listening on {port} after {timeout:.0f}s")


def tree_peak_rss_mb(pid: int) -> float:
    """Peak resident memory (VmHWM) of a process and its children, in MB."""
    pids = [pid]
    try:
        children = subprocess.run(
            ["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True, check=False
        ).stdout.split()
        pids += [int(c) for c in children]
    except OSError:
        pass
    total = 0
    for p in pids:
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    total += int(line.split()[1])
        except OSError:
            continue
    return total / 1024


def stop(proc: subprocess.Popen[bytes] | None) -> None:
    if proc is None or proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)


SETUP = """
import json, sys
from decimal import Decimal
import django
django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0)
from ledger.models import ProviderProfile
from ledger.services.keys import mint_virtual_key
ProviderProfile.objects.create(name="mock", transport="openai", api_base=sys.argv[1],
    categories={"medium": {"model": "mock", "input_cost_per_token": 1e-6,
                           "output_cost_per_token": 2e-6}})
_, secret = mint_virtual_key(realm_id="bench", agent_id="a", provider="mock", model="mock",
    cap_usd=Decimal("1000000"), on_exhausted="starve", credential_handle="")
print(secret)
"""


def start_ours(tmp: Path, mock_port: int) -> tuple[subprocess.Popen[bytes], int, str]:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "bearpit.settings",
        "BEARPIT_HOME": str(tmp / "home"),
    }
    for var in ("BEARPIT_DATABASE_URL", "BEARPIT_REDIS_URL"):
        env.pop(var, None)
    secret = (
        subprocess.run(
            [sys.executable, "-c", SETUP, f"http://127.0.0.1:{mock_port}/v1"],
            cwd=REPO,
            env=env,
            check=True,
            capture_output=True,
            text=True,
        )
        .stdout.strip()
        .splitlines()[-1]
    )
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "manage.py", "pit_gateway", "--port", str(port), "--no-uds"],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    wait_port(port, proc, 120)
    return proc, port, secret


LITELLM_MASTER_KEY = "sk-bench-" + os.urandom(16).hex()


def start_litellm(tmp: Path, mock_port: int) -> tuple[subprocess.Popen[bytes], int]:
    venv = tmp / "litellm-venv"
    uv = shutil.which("uv")
    if uv is None:
        raise RuntimeError("uv is not on PATH")
    subprocess.run([uv, "venv", "-q", "-p", sys.executable, str(venv)], check=True, timeout=300)
    subprocess.run(
        [uv, "pip", "install", "-q", "-p", str(venv / "bin" / "python"), "litellm[proxy]"],
        check=True,
        timeout=900,
    )
    config = tmp / "litellm.yaml"
    config.write_text(
        "model_list:\n"
        "  - model_name: mock\n"
        "    litellm_params:\n"
        "      model: openai/mock\n"
        f"      api_base: http://127.0.0.1:{mock_port}/v1\n"
        "      api_key: mock-key\n"
        "litellm_settings:\n"
        "  telemetry: false\n"
    )
    port = free_port()
    env = {
        **os.environ,
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "LITELLM_LOG": "ERROR",
        "LITELLM_MASTER_KEY": LITELLM_MASTER_KEY,  # it refuses to start without one
    }
    env.pop("DATABASE_URL", None)
    proc = subprocess.Popen(
        [
            str(venv / "bin" / "litellm"),
            "--config",
            str(config),
            "--port",
            str(port),
            "--host",
            "127.0.0.1",
            "--num_workers",
            "1",
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=(tmp / "litellm.log").open("wb"),
    )
    try:
        wait_port(port, proc, 300)
    except RuntimeError as exc:
        log = (tmp / "litellm.log").read_text(errors="replace")[-2000:]
        stop(proc)
        raise RuntimeError(f"{exc}; log tail:\n{log}") from exc
    return proc, port


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument(
        "--skip", default="", help="comma-separated targets to leave out: ours, litellm"
    )
    parser.add_argument("--serve-mock", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_mock is not None:
        serve_mock(args.serve_mock)
        return

    tmp = Path(tempfile.mkdtemp(prefix="bearpit-bench-"))
    results: dict[str, dict[int, dict[str, float]]] = {}
    rss: dict[str, float | None] = {}
    procs: list[subprocess.Popen[bytes]] = []
    litellm_error = ""
    try:
        mock_port = free_port()
        mock = subprocess.Popen([sys.executable, __file__, "--serve-mock", str(mock_port)])
        procs.append(mock)
        wait_port(mock_port, mock, 30)
        targets: list[tuple[str, int, str, subprocess.Popen[bytes] | None]] = [
            ("direct", mock_port, "", None)
        ]
        skip = set(args.skip.split(","))
        if "ours" not in skip:
            ours, ours_port, secret = start_ours(tmp, mock_port)
            procs.append(ours)
            targets.append(("ours", ours_port, secret, ours))
        try:
            if "litellm" in skip:
                raise RuntimeError("skipped")
            lite, lite_port = start_litellm(tmp, mock_port)
            procs.append(lite)
            targets.append(("litellm", lite_port, LITELLM_MASTER_KEY, lite))
        except (RuntimeError, subprocess.SubprocessError, OSError) as exc:
            litellm_error = str(exc)
            print(f"litellm proxy unavailable: {exc}", flush=True)
        for name, port, auth, proc in targets:
            results[name] = {}
            for conc in (1, 16):
                results[name][conc] = run_load(port, auth, args.requests, conc)
                r = results[name][conc]
                print(
                    f"{name:8s} c={conc:<3d} p50 {r['p50_ms']:.2f} ms  p99 {r['p99_ms']:.2f} ms  "
                    f"{r['rps']:.0f} req/s  errors {r['errors']:.0f}",
                    flush=True,
                )
            rss[name] = tree_peak_rss_mb(proc.pid) if proc else tree_peak_rss_mb(mock.pid)
    finally:
        for proc in reversed(procs):
            stop(proc)
        shutil.rmtree(tmp, ignore_errors=True)

    def added(name: str, conc: int, key: str) -> float | None:
        if name not in results:
            return None
        return results[name][conc][key] - results["direct"][conc][key]

    summary: dict[str, Any] = {"requests": args.requests}
    for name in ("ours", "litellm"):
        for conc in (1, 16):
            for key in ("p50_ms", "p99_ms"):
                value = added(name, conc, key)
                summary[f"{name}_{key[:3]}_added_ms_c{conc}"] = (
                    None if value is None else round(value, 3)
                )
            summary[f"{name}_rps_c{conc}"] = (
                round(results[name][conc]["rps"], 1) if name in results else None
            )
        peak = rss.get(name)
        summary[f"{name}_peak_rss_mb"] = round(peak, 1) if peak else None
        print(
            f"{name:8s} added p50 {summary[f'{name}_p50_added_ms_c1']} ms (c=1), "
            f"{summary[f'{name}_p50_added_ms_c16']} ms (c=16); "
            f"p99 {summary[f'{name}_p99_added_ms_c1']} ms (c=1); "
            f"peak RSS {summary[f'{name}_peak_rss_mb']} MB"
        )
    summary["direct_rps_c16"] = round(results["direct"][16]["rps"], 1)
    ours_p50 = summary["ours_p50_added_ms_c1"]
    lite_p50 = summary["litellm_p50_added_ms_c1"]
    summary["ours_p50_added_ms"] = ours_p50
    summary["litellm_p50_added_ms"] = lite_p50
    summary["latency_ratio"] = (
        round(ours_p50 / lite_p50, 3) if ours_p50 is not None and lite_p50 else None
    )
    lite_rps = summary["litellm_rps_c16"]
    ours_rps = summary["ours_rps_c16"]
    summary["throughput_ratio_c16"] = (
        round(ours_rps / lite_rps, 2) if ours_rps and lite_rps else None
    )
    lite_rss = summary["litellm_peak_rss_mb"]
    ours_rss = summary["ours_peak_rss_mb"]
    summary["rss_ratio"] = round(ours_rss / lite_rss, 3) if ours_rss and lite_rss else None
    if litellm_error:
        summary["litellm_error"] = litellm_error[:300]
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
