"""``python -m runtime [--await-birth SECONDS] BIRTH.json``: run one agent until it is killed.

With ``--await-birth`` the runtime is started before its birth config exists: it loads its
code first and then waits (up to SECONDS) for the platform to deliver the file, so the
interpreter's start-up overlaps the platform's own provisioning work. The platform writes
the file under another name and renames it into place, so its appearance means it is whole.

``python -m runtime --warm`` loads what an agent loads and exits (see runtime/warm.py).
"""

from __future__ import annotations

import asyncio
import signal
import sys
import time
from pathlib import Path

# httpx loads its command-line tool (click, rich, pygments), and httpcore its HTTP/2 stack
# (h2, hpack, hyperframe: about 3 MB resident), whenever those happen to be installed. The
# runtime speaks HTTP/1.1 only, so a ``None`` entry makes those optional imports fail fast,
# which httpx and httpcore expect.
if "httpx" not in sys.modules:
    sys.modules["httpx._main"] = None  # type: ignore[assignment]
if "httpcore" not in sys.modules:
    sys.modules["h2"] = None  # type: ignore[assignment]

from runtime.birth import BirthError, load_birth

USAGE = "usage: python -m runtime [--await-birth SECONDS] BIRTH.json | --warm"
# Polling stays cheap (a stat per step) and the step short, so delivery is seen promptly.
_POLL_FIRST_S = 0.005
_POLL_MAX_S = 0.02


def await_birth(path: Path, timeout_s: float) -> None:
    """Block until ``path`` exists; BirthError if it does not within ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    step = _POLL_FIRST_S
    while not path.exists():
        if time.monotonic() >= deadline:
            raise BirthError(f"{path}: not delivered within {timeout_s:g} s")
        time.sleep(step)
        step = min(step * 1.5, _POLL_MAX_S)


async def _serve(config_path: Path) -> None:
    config = load_birth(config_path)
    # Imported after validation, so a bad config is reported without loading the rest.
    from runtime.agent import Agent
    from runtime.matrix_bus import MatrixBus

    agent = Agent(config, None)
    if config.bus is not None:
        agent.bus = MatrixBus(config.bus, config.agent_id, Path(config.state_dir), agent.trace)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await agent.run(stop)


def _parse(argv: list[str]) -> tuple[Path, float | None]:
    if len(argv) == 3 and argv[0] == "--await-birth":
        try:
            wait = float(argv[1])
        except ValueError:
            raise SystemExit(f"--await-birth: expected seconds, found {argv[1]!r}") from None
        if wait <= 0:
            raise SystemExit(f"--await-birth: expected a positive number, found {argv[1]!r}")
        return Path(argv[2]), wait
    if len(argv) == 1 and not argv[0].startswith("-"):
        return Path(argv[0]), None
    raise SystemExit(USAGE)


def main(argv: list[str]) -> int:
    if argv == ["--warm"]:
        from runtime.warm import main as warm

        return warm()
    try:
        path, wait = _parse(argv)
    except SystemExit as exc:
        print(exc, file=sys.stderr)
        return 2
    try:
        if wait is not None:
            # Load everything while the platform is still preparing the config.
            import runtime.agent
            import runtime.matrix_bus  # noqa: F401

            await_birth(path, wait)
        asyncio.run(_serve(path))
    except BirthError as exc:
        print(f"bad birth config:\n{exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
