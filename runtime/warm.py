"""``python -m runtime --warm``: load everything an agent's runtime loads, then exit.

The platform runs this once with bytecode writing on and a pycache prefix set, so the
compiled files land where sandboxes (which may not write them) look them up. Beyond the
start-up imports it makes one HTTP exchange over a Unix socket and checks one tool
argument, because what a first exchange and jsonschema's format checkers need is imported
lazily, on first use.
"""

from __future__ import annotations

import asyncio
import importlib
import os
import tempfile

_MODULES = (
    "runtime.agent",
    "runtime.matrix_bus",
    "runtime.matrix_http",
    "runtime.mcp_client",
    "runtime.mcp_http",
    "runtime.filetools",
    "runtime.resume",
    "runtime.schema",
)


async def _one_request(socket_path: str) -> None:
    from runtime import http

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n")
        writer.write(b"content-length: 2\r\n\r\n{}")
        await writer.drain()
        writer.close()

    server = await asyncio.start_unix_server(answer, path=socket_path)
    client = http.client("http://warm", socket_path=socket_path, timeout=http.Timeout(10.0))
    async with server, client:
        (await client.request("GET", "/")).json()


def main() -> int:
    for name in _MODULES:
        importlib.import_module(name)
    from jsonschema import Draft202012Validator

    Draft202012Validator({"type": "object", "properties": {"a": {"type": "string"}}}).validate(
        {"a": "b"}
    )
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(_one_request(os.path.join(tmp, "warm.sock")))
    return 0
