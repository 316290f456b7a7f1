"""``python -m runtime BIRTH.json``: run one agent until it is killed."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

# httpx loads its command-line tool (click, rich, pygments) whenever those happen to be
# installed; a ``None`` entry makes that optional import fail fast, which httpx expects.
# pydantic scans every installed distribution for plugins when the first model is built; the
# runtime uses none, and the scan is a noticeable share of start-up in a large environment.
os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
if "httpx" not in sys.modules:
    sys.modules["httpx._main"] = None  # type: ignore[assignment]

from runtime.birth import BirthError, load_birth


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


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m runtime BIRTH.json", file=sys.stderr)
        return 2
    try:
        asyncio.run(_serve(Path(argv[0])))
    except BirthError as exc:
        print(f"bad birth config:\n{exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
