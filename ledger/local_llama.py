"""Serve one GGUF model with llama.cpp's OpenAI-compatible server (the ``xllamacpp`` wheel).

Run as its own process (``python -m ledger.local_llama --model FILE --port N ...``) so a
model that fails to load, or a crash inside llama.cpp, takes down only this process and
never the platform. It imports nothing of Django: the launcher passes everything on the
command line. The server is up once ``GET /health`` answers 200; SIGTERM stops it.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from typing import Any


def _params(args: argparse.Namespace) -> Any:
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = args.model
    params.hostnames = [args.host]
    params.port = args.port
    params.n_parallel = args.slots
    # The context is shared among the slots: each gets an equal part.
    params.n_ctx = args.context * args.slots
    params.n_predict = args.max_tokens
    params.cache_prompt = True
    # The default for requests that name none (the runtime names none).
    params.sampling.temp = args.temperature
    if args.alias:
        params.model_alias = args.alias
    if args.threads:
        params.cpuparams.n_threads = args.threads
        params.cpuparams_batch.n_threads = args.threads
    return params


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ledger.local_llama")
    parser.add_argument("--model", required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--slots", type=int, default=1)
    parser.add_argument("--context", type=int, default=8192)
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument("--alias", default="")
    parser.add_argument("--temperature", type=float, default=0.8)
    args = parser.parse_args(argv)
    try:
        import xllamacpp
    except ImportError:
        print("xllamacpp is not installed (uv sync --group local)", file=sys.stderr, flush=True)
        return 3
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    try:
        server = xllamacpp.Server(_params(args))
    except Exception as exc:  # whatever llama.cpp raised: the launcher shows this line
        print(f"llama.cpp could not serve {args.model}: {exc}", file=sys.stderr, flush=True)
        return 2
    print(f"serving {args.model} at {server.listening_address}", flush=True)
    stop.wait()
    del server  # its destructor stops the server's threads
    return 0


if __name__ == "__main__":
    sys.exit(main())
