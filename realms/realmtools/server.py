"""The realmtools MCP server: streamable HTTP, stateless, on a Unix socket.

Stateless mode means every request stands alone, so a server restart is
invisible to clients (no "session not found"). A small ASGI guard in front of
the MCP app verifies the bearer token and answers a JSON-RPC error body when it
is missing or bad, and keeps DNS rebinding out of the optional TCP listener.
The SDK's own Host check is off because it cannot tell socket clients apart.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import socket
import stat
import threading
import time
from collections.abc import Awaitable, Callable, MutableMapping
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import uvicorn
from django.conf import settings
from django.db import close_old_connections
from mcp.server.fastmcp import FastMCP
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import Tool as MCPTool

from realms.realmtools import catalogue, granted, tools
from realms.realmtools.context import Caller
from realms.realmtools.errors import Refusal
from realms.realmtools.facts import load_facts
from realms.realmtools.identity import Identity, TokenError, realmtools_secret, verify_token

log = logging.getLogger(__name__)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

NO_TOKEN = "no valid realmtools token on this request"  # noqa: S105 - a message, not a secret
MCP_PATH = "/mcp"
# A JSON-RPC request is small; the SDK refuses more than 4 MB too, but only after reading it.
MAX_BODY = 4 * 1024 * 1024
_LOOPBACK = ("127.0.0.1", "localhost", "[::1]")


def default_socket_path() -> Path:
    return Path(settings.BEARPIT_HOME) / "run" / "realmtools.sock"


async def _reply(send: Send, status: int, code: int, message: str) -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}})
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json")],
        }
    )
    await send({"type": "http.response.body", "body": body.encode()})


def _loopback_name(value: str) -> bool:
    host = value.split("//", 1)[-1]
    return any(host == name or host.startswith(name + ":") for name in _LOOPBACK)


class Guard:
    """Token check for every HTTP request; Host/Origin check for TCP clients."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        server = scope.get("server")
        over_tcp = server is not None and server[1] is not None
        # A browser cannot reach a Unix socket, so only TCP needs the rebinding check.
        if over_tcp and not _loopback_name(headers.get("host", "")):
            await _reply(send, 421, -32600, "invalid Host header for realmtools")
            return
        origin = headers.get("origin")
        if over_tcp and origin and not _loopback_name(origin):
            await _reply(send, 403, -32600, "invalid Origin header for realmtools")
            return
        auth = headers.get("authorization", "")
        scheme, _, token = auth.partition(" ")
        try:
            if scheme.lower() != "bearer" or not token.strip():
                raise TokenError("no bearer token")
            identity = verify_token(token.strip())
        except TokenError:
            await _reply(send, 401, -32001, NO_TOKEN)
            return
        try:
            body = await _read_body(receive)
        except _TooLarge:
            await _reply(send, 413, -32600, f"request body over {MAX_BODY} bytes")
            return
        if body is None:
            # The agent went away mid-request (its sandbox stopped): nothing to answer, and
            # nothing for the SDK to report as a crash.
            log.debug("realmtools: %s left before its request was read", identity.agent_id)
            return
        scope = dict(scope)
        scope[tools.IDENTITY_KEY] = identity
        scope[tools.TOKEN_KEY] = token.strip()
        await self.app(scope, _replay(body, receive), send)


class _TooLarge(Exception):
    """The request body is over MAX_BODY."""


async def _read_body(receive: Receive) -> bytes | None:
    """The whole request body, read before the SDK sees it; None when the client left."""
    parts: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_BODY:
            raise _TooLarge
        parts.append(chunk)
        if not message.get("more_body", False):
            return b"".join(parts)


def _replay(body: bytes, receive: Receive) -> Receive:
    """A receive that hands over the body already read, then the connection's own events."""
    sent = False

    async def again() -> Message:
        nonlocal sent
        if sent:
            return await receive()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return again


def _visible(identity: Identity) -> list[str]:
    close_old_connections()
    try:
        return catalogue.visible_names(Caller(identity, load_facts(identity.realm_id)))
    except Refusal:
        return []
    finally:
        close_old_connections()


class RealmtoolsMCP(FastMCP[Any]):
    """FastMCP with a per-caller tool list and the granted tools served from their registry."""

    def _identity(self) -> Identity:
        request = self._mcp_server.request_context.request
        identity = (getattr(request, "scope", None) or {}).get(tools.IDENTITY_KEY)
        if not isinstance(identity, Identity):
            raise RuntimeError("a realmtools request arrived without a verified identity")
        return identity

    async def list_tools(self) -> list[MCPTool]:
        allowed = set(await anyio.to_thread.run_sync(_visible, self._identity()))
        listed = [t for t in await super().list_tools() if t.name in allowed]
        for name in granted.names():
            tool = granted.get(name)
            if tool is not None and name in allowed:
                listed.append(
                    MCPTool(name=name, description=tool.description, inputSchema=tool.params)
                )
        return listed

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        checked = tools.ARGUMENT_PROBLEM.set(tools.argument_problem(arguments or {}))
        try:
            if granted.get(name) is None or name in catalogue.RULES:
                return await super().call_tool(name, arguments)
            identity = self._identity()
            args = dict(arguments or {})
            run = partial(tools.run_for, identity, name, lambda c: granted.call(c, name, args))
            return await anyio.to_thread.run_sync(run)
        finally:
            tools.ARGUMENT_PROBLEM.reset(checked)


def build_mcp() -> RealmtoolsMCP:
    mcp = RealmtoolsMCP(
        name="realmtools",
        instructions=(
            "Deterministic realm mechanics. Your identity comes from your token; tool "
            "calls are free and never cost a turn."
        ),
        stateless_http=True,
        json_response=True,
        streamable_http_path=MCP_PATH,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        log_level="WARNING",
    )
    tools.register(mcp)
    return mcp


def build_app() -> ASGIApp:
    realmtools_secret()  # refuse to start without a usable secret
    return Guard(build_mcp().streamable_http_app())


def _socket_in_use(path: Path) -> bool:
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(str(path))
    except OSError:
        return False
    finally:
        probe.close()
    return True


def bind_unix(path: Path) -> socket.socket:
    """Bind the socket file, replacing a stale one but never a live server's."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists() or path.is_symlink():
        if not stat.S_ISSOCK(path.lstat().st_mode):
            raise RuntimeError(f"{path} exists and is not a socket")
        if _socket_in_use(path):
            raise RuntimeError(f"another realmtools server is serving {path}")
        path.unlink()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(path))
    # Sandboxed agents run as their own uids; the directory decides who reaches it.
    os.chmod(path, 0o666)  # noqa: S103 - access is governed by the directory bind
    return sock


def bind_tcp(port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    return sock


class RealmtoolsServer:
    """The server on a Unix socket and/or a loopback TCP port, in a background thread."""

    def __init__(self, uds_path: Path | None = None, port: int | None = None) -> None:
        if uds_path is None and port is None:
            uds_path = default_socket_path()
        self.uds_path = uds_path
        self.port = port
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._sockets: list[socket.socket] = []

    @property
    def url(self) -> str:
        """The TCP URL (when serving TCP)."""
        return f"http://127.0.0.1:{self.port}{MCP_PATH}"

    def _prepare(self) -> list[socket.socket]:
        sockets: list[socket.socket] = []
        if self.uds_path is not None:
            sockets.append(bind_unix(self.uds_path))
        if self.port is not None:
            tcp = bind_tcp(self.port)
            self.port = int(tcp.getsockname()[1])
            sockets.append(tcp)
        self._sockets = sockets
        config = uvicorn.Config(build_app(), log_level="warning", lifespan="on", access_log=False)
        self._server = uvicorn.Server(config)
        return sockets

    def start(self, timeout: float = 15.0) -> None:
        """Serve in a background thread; return once connections are accepted."""
        sockets = self._prepare()
        server = self._server
        assert server is not None
        self._thread = threading.Thread(
            target=server.run, kwargs={"sockets": sockets}, name="realmtools", daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("the realmtools server did not start")
            time.sleep(0.02)

    def serve_forever(self) -> None:
        """Serve until SIGINT or SIGTERM, then finish in-flight calls and remove the socket.

        The server runs in its thread and this thread waits for the signal, so the
        process exits normally (uvicorn in the main thread re-raises the signal)."""
        stopping = threading.Event()
        previous = {
            sig: signal.signal(sig, lambda *_: stopping.set())
            for sig in (signal.SIGINT, signal.SIGTERM)
        }
        try:
            self.start()
            while not stopping.wait(0.5):
                if self._thread is None or not self._thread.is_alive():
                    raise RuntimeError("the realmtools server stopped unexpectedly")
        finally:
            self.stop()
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def stop(self, timeout: float = 10.0) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout)
        self._cleanup()

    def _cleanup(self) -> None:
        for sock in self._sockets:
            with contextlib.suppress(OSError):
                sock.close()
        self._sockets = []
        if self.uds_path is not None:
            with contextlib.suppress(FileNotFoundError):
                if stat.S_ISSOCK(self.uds_path.lstat().st_mode):
                    self.uds_path.unlink()
