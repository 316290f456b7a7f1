"""The homeserver's socket on a worker host that does not run the homeserver.

Sandboxes and the worker reach the bus through ``BEARPIT_HOME/run/homeserver.sock``.
One homeserver serves every host; on the others ``pit_bus_relay`` listens on that
socket and copies bytes both ways to the homeserver (``host:port`` or ``unix:PATH``)."""

from __future__ import annotations

import asyncio
import contextlib
import os
from pathlib import Path

from django.conf import settings

BUFFER = 65536


def default_socket_path() -> Path:
    return Path(settings.BEARPIT_HOME) / "run" / "homeserver.sock"


def parse_target(target: str) -> tuple[str, int] | Path:
    """``host:port`` or ``unix:PATH``; ValueError naming what is wrong."""
    if target.startswith("unix:"):
        path = Path(target[len("unix:") :])
        if not path.is_absolute():
            raise ValueError(f"--to: expected an absolute socket path after unix:; got {target!r}")
        return path
    host, sep, port = target.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"--to: expected host:port or unix:/path/to.sock; got {target!r}")
    return host, int(port)


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(BUFFER):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        with contextlib.suppress(Exception):
            writer.close()


async def serve(socket_path: Path, target: tuple[str, int] | Path) -> None:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            if isinstance(target, Path):
                up_reader, up_writer = await asyncio.open_unix_connection(str(target))
            else:
                up_reader, up_writer = await asyncio.open_connection(*target)
        except OSError:
            writer.close()
            return
        await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))

    socket_path.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileNotFoundError):
        socket_path.unlink()
    server = await asyncio.start_unix_server(handle, path=str(socket_path))
    os.chmod(socket_path, 0o666)  # noqa: S103 (the sandboxes' uids connect, as to Synapse's)
    async with server:
        await server.serve_forever()
