"""Start and stop the local llama.cpp server the `local` provider's keys are forwarded to.

The server is a child process (``ledger.local_llama``), its output kept in a log file
beside the platform's sockets. ``start()`` returns once ``/health`` says the model is
loaded, or raises :class:`LocalServerError` with one line saying what is wrong (no such
file, a port in use, a model llama.cpp cannot load and the last thing it said).
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

HOST = "127.0.0.1"


class LocalServerError(RuntimeError):
    """The local model server cannot be started; the message names the fix."""


@dataclass(frozen=True)
class LocalServerConfig:
    model: Path
    port: int
    slots: int
    context: int
    max_tokens: int
    threads: int
    start_timeout_s: float
    temperature: float = 0.8

    @classmethod
    def from_settings(cls, agents: int | None = None) -> LocalServerConfig:
        path = settings.BEARPIT_LOCAL_MODEL
        if not path:
            raise LocalServerError("BEARPIT_LOCAL_MODEL: not set; name a GGUF model file")
        return cls(
            model=Path(path).expanduser(),
            port=int(settings.BEARPIT_LOCAL_PORT),
            slots=slots_for(agents),
            context=int(settings.BEARPIT_LOCAL_CONTEXT),
            max_tokens=int(settings.BEARPIT_LOCAL_MAX_TOKENS),
            threads=int(settings.BEARPIT_LOCAL_THREADS),
            start_timeout_s=float(settings.BEARPIT_LOCAL_START_TIMEOUT),
            temperature=float(settings.BEARPIT_LOCAL_TEMPERATURE),
        )

    @property
    def api_base(self) -> str:
        return f"http://{HOST}:{self.port}/v1"


def slots_for(agents: int | None) -> int:
    """How many requests the server answers at once: the setting, else one per agent.

    Every agent of a realm may be waiting on its model at the same moment (a referee and
    players alike), so a slot each keeps none of them queued behind another; past
    BEARPIT_LOCAL_MAX_SLOTS the cores are the limit, not the slots. Without a realm to size
    to (``pit_serve`` serves whatever comes), it is the most allowed.
    """
    fixed = int(settings.BEARPIT_LOCAL_SLOTS)
    if fixed:
        return fixed
    most = int(settings.BEARPIT_LOCAL_MAX_SLOTS)
    return most if agents is None else max(1, min(agents, most))


def local_api_base() -> str:
    """The address keys of the `local` provider go to while the platform serves the model."""
    return f"http://{HOST}:{int(settings.BEARPIT_LOCAL_PORT)}/v1"


def model_alias(path: str | Path) -> str:
    """The name the model is served and metered under: its file name without ``.gguf``."""
    name = Path(path).name
    return name[: -len(".gguf")] if name.lower().endswith(".gguf") else name


def check_config(config: LocalServerConfig) -> None:
    """What can be known wrong before starting anything."""
    if not config.model.is_file():
        raise LocalServerError(
            f"BEARPIT_LOCAL_MODEL: no such file {config.model}; name a GGUF model file"
        )
    with open(config.model, "rb") as fh:
        magic = fh.read(4)
    if magic != b"GGUF":
        raise LocalServerError(
            f"BEARPIT_LOCAL_MODEL: {config.model} is not a GGUF file (llama.cpp serves GGUF)"
        )
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((HOST, config.port))
        except OSError:
            raise LocalServerError(
                f"BEARPIT_LOCAL_PORT: {HOST}:{config.port} is in use; choose another port"
            ) from None
    try:
        import xllamacpp  # noqa: F401
    except ImportError:
        raise LocalServerError(
            "the local model server needs xllamacpp: uv sync --group local"
        ) from None


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as resp:  # noqa: S310 (our own server)
            return bool(resp.status == 200)
    except (urllib.error.URLError, OSError, ValueError):
        return False


class LocalServer:
    def __init__(self, config: LocalServerConfig, log_path: Path) -> None:
        self.config = config
        self.log_path = log_path
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def api_base(self) -> str:
        return self.config.api_base

    def start(self) -> LocalServer:
        check_config(self.config)
        c = self.config
        argv = [
            sys.executable,
            "-m",
            "ledger.local_llama",
            "--model",
            str(c.model),
            "--host",
            HOST,
            "--port",
            str(c.port),
            "--slots",
            str(c.slots),
            "--context",
            str(c.context),
            "--max-tokens",
            str(c.max_tokens),
            "--threads",
            str(c.threads),
            "--alias",
            model_alias(c.model),
            "--temperature",
            str(c.temperature),
        ]
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "wb") as log:
            self._proc = subprocess.Popen(
                argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
            )
        try:
            self._wait_healthy()
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_healthy(self) -> None:
        assert self._proc is not None
        health = f"http://{HOST}:{self.config.port}/health"
        deadline = time.monotonic() + self.config.start_timeout_s
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise LocalServerError(
                    f"the local model server exited ({self._proc.returncode}): "
                    f"{self._last_words()} (log: {self.log_path})"
                )
            if _healthy(health):
                return
            time.sleep(0.2)
        raise LocalServerError(
            f"the local model server did not answer /health within "
            f"{self.config.start_timeout_s:.0f} s (BEARPIT_LOCAL_START_TIMEOUT; log: "
            f"{self.log_path})"
        )

    def _last_words(self) -> str:
        """The server's own explanation: our one-line summary, else its last error line."""
        try:
            lines = self.log_path.read_text("utf-8", "replace").splitlines()
        except OSError:
            return "no log"
        for prefix in ("llama.cpp could not serve", "xllamacpp is not installed"):
            for line in reversed(lines):
                if line.startswith(prefix):
                    return line
        errors = [line for line in lines if " E " in line]
        return (errors or lines or ["no output"])[-1].strip()[:300]

    def pid(self) -> int | None:
        return None if self._proc is None else self._proc.pid

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
