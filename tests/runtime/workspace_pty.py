"""Driving ``manage.py pit_agent --workspace DIR`` through a real pseudo-terminal.

The agent runs as a subprocess whose controlling terminal is the pty, so a ``\\x03`` written
to it is a real Ctrl-C (the line discipline turns it into SIGINT). Its model is the scripted
provider (the OpenAI wire format over TCP) served by uvicorn on a thread of the test, as is
any MCP server a test needs.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import select
import subprocess
import sys
import termios
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import uvicorn

from tests.e2e.pitrun import REPO, free_port, pit_env

KEY = "ws-test-key-5e1f0c9a7b3d4e2f"  # not sk-like: only the exact secret is redacted


@contextlib.contextmanager
def served(app: Any, *, lifespan: str = "off") -> Iterator[str]:
    """Serve an ASGI app on a free local port from a thread; yield its base URL."""
    port = free_port()
    config = uvicorn.Config(app, port=port, log_level="warning", lifespan=lifespan)  # type: ignore[arg-type]
    server = uvicorn.Server(config)
    thread = threading.Thread(target=lambda: asyncio.run(server.serve()), daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline, "the test server did not start"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


def _controlling_tty() -> None:
    # Runs in the child after setsid: the pty (its stdin) becomes its controlling terminal.
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


class PtyAgent:
    def __init__(self, args: list[str], home: Path, **env: str) -> None:
        master, slave = os.openpty()
        self.proc = subprocess.Popen(
            [sys.executable, "manage.py", "pit_agent", *args],
            cwd=REPO,
            env=pit_env(home, **env),
            stdin=slave,
            stdout=slave,
            stderr=slave,
            start_new_session=True,
            preexec_fn=_controlling_tty,  # safe here: the child execs right after
        )
        os.close(slave)
        self.master = master
        self.output = ""
        self._seen = 0

    def _read(self, timeout: float) -> bool:
        ready, _, _ = select.select([self.master], [], [], timeout)
        if not ready:
            return True
        try:
            data = os.read(self.master, 65536)
        except OSError:  # EIO: the child closed its side
            return False
        if not data:
            return False
        self.output += data.decode("utf-8", "replace")
        return True

    def expect(self, needle: str, timeout: float = 30) -> str:
        """Wait until ``needle`` is printed after what earlier calls consumed."""
        deadline = time.monotonic() + timeout
        while True:
            at = self.output.find(needle, self._seen)
            if at >= 0:
                text = self.output[self._seen : at + len(needle)]
                self._seen = at + len(needle)
                return text
            if time.monotonic() > deadline:
                raise AssertionError(f"no {needle!r} within {timeout}s; output:\n{self.output}")
            if not self._read(0.1) and self.proc.poll() is not None:
                raise AssertionError(
                    f"the agent exited ({self.proc.returncode}) before {needle!r}:\n{self.output}"
                )

    def send(self, text: str) -> None:
        os.write(self.master, text.encode())

    def line(self, text: str) -> None:
        self.send(text + "\n")

    def wait(self, timeout: float = 20) -> int:
        deadline = time.monotonic() + timeout
        while self.proc.poll() is None:
            assert time.monotonic() < deadline, f"the agent did not exit:\n{self.output}"
            self._read(0.1)
        while self._read(0):
            if not select.select([self.master], [], [], 0)[0]:
                break
        return self.proc.returncode

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        os.close(self.master)


@contextlib.contextmanager
def agent_at(workspace: Path, home: Path, base_url: str, *extra: str) -> Iterator[PtyAgent]:
    """The workspace agent on ``workspace``, its key in the environment (never argv)."""
    args = ["--workspace", str(workspace), "--api-base", f"{base_url}/v1", "--model", "scripted"]
    agent = PtyAgent([*args, *extra], home, OPENAI_API_KEY=KEY)
    try:
        agent.expect("/help for help")
        yield agent
    finally:
        agent.close()
