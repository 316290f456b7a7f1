"""MCP client: one persistent streamable-HTTP session per server, supervised.

A supervising task owns each session: it connects (bearer auth, TCP or a Unix socket), lists the
tools, re-lists them on ``tools/list_changed``, pings while idle to notice a dead server, and
reconnects with backoff from 1 s to 60 s without ever giving up. A failed or timed-out call fails
only that call; while a server is down its tools stay listed and answer "unavailable".

A wake does not wait out the backoff: before a turn, :meth:`McpHub.ensure_up` has every server
that is down try again at once, every half second for a few seconds, so an agent woken just
after the platform restarted finds its tools (instead of having none for that turn).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import re
from collections.abc import Callable
from typing import Any

from runtime import http
from runtime.birth import McpServerSettings
from runtime.mcp_http import McpRemoteError, McpSession, McpTool, McpTransportError
from runtime.tools import ToolDefinition, ToolFailure, ToolRegistry
from runtime.trace import TraceWriter

PING_INTERVAL_S = 5.0
MAX_BACKOFF_S = 60.0
RETRY_POKE_S = 0.5
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


class _Broken(Exception):
    pass


def exposed_name(server: str, tool: str, prefix: str = "mcp__") -> str:
    """``mcp__<server>__<tool>`` (or another prefix), sanitised and within 64 characters."""
    name = _UNSAFE.sub("_", f"{prefix}{server}__{tool}")
    if len(name) <= 64:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"{name[:55]}_{digest}"


def result_text(result: dict[str, Any]) -> str:
    """Structured content as JSON, unless it is only the SDK's wrapper of a plain result."""
    structured = result.get("structuredContent")
    content = [b for b in result.get("content") or [] if isinstance(b, dict)]
    wrapper_only = isinstance(structured, dict) and set(structured) == {"result"}
    if structured is not None and not (wrapper_only and content):
        return json.dumps(structured, ensure_ascii=False)
    parts = []
    for block in content:
        if block.get("type") == "text":
            parts.append(str(block.get("text", "")))
        else:
            parts.append(f"[{block.get('type')} content omitted]")
    return "\n".join(parts)


class McpServer:
    """The supervised connection to one MCP server."""

    def __init__(
        self, settings: McpServerSettings, trace: TraceWriter, on_tools: Callable[[], None]
    ) -> None:
        self.settings = settings
        self.name = settings.name
        self._trace = trace
        self._on_tools = on_tools
        self.tools: list[McpTool] = []
        self.state = "connecting"
        self._session: McpSession | None = None
        self._broken = asyncio.Event()
        self._ended = asyncio.Event()
        self._ready = asyncio.Event()
        self._up = asyncio.Event()
        self._retry_now = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._relist: asyncio.Task[None] | None = None
        self._broken_reason = ""
        self.connects = 0

    def start(self) -> None:
        self._task = asyncio.create_task(self._supervise(), name=f"mcp-{self.name}")

    async def wait_ready(self, timeout: float) -> bool:
        try:
            await asyncio.wait_for(self._ready.wait(), timeout)
        except TimeoutError:
            return False
        return True

    async def ensure_up(self, timeout: float) -> bool:
        """Have a server that is down reconnect now rather than after its backoff, and
        wait up to ``timeout`` for it; True if it is up."""
        deadline = asyncio.get_running_loop().time() + timeout
        while not self._up.is_set():
            remaining = deadline - asyncio.get_running_loop().time()
            if remaining <= 0:
                return False
            self._retry_now.set()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._up.wait(), min(RETRY_POKE_S, remaining))
        return True

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            # Shutting down: whatever the task ended with has been traced already.
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task

    def _http(self) -> http.Client:
        headers = {}
        if self.settings.bearer_token:
            headers["Authorization"] = f"Bearer {self.settings.bearer_token}"
        return http.client(
            self.settings.url,
            socket_path=self.settings.socket_path,
            headers=headers,
            timeout=http.Timeout(
                self.settings.call_timeout_s, connect=self.settings.connect_timeout_s
            ),
            follow_redirects=True,
        )

    def _set_state(self, state: str, **detail: Any) -> None:
        self.state = state
        self._trace.emit("mcp_state", server=self.name, state=state, **detail)

    async def _supervise(self) -> None:
        backoff = 1.0
        while True:
            error = "closed"
            connects_before = self.connects
            try:
                await self._run_session()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                error = _describe(exc)
            self._session = None
            self._up.clear()
            self._ended.set()
            if self.connects > connects_before:
                backoff = 1.0  # it was up: start the backoff ladder again
            self._set_state("down", error=error[:300], retry_in_s=backoff)
            self._ready.set()  # startup may go on; the prompt names the server as unreachable
            self._retry_now.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._retry_now.wait(), backoff)
            backoff = min(backoff * 2, MAX_BACKOFF_S)

    async def _run_session(self) -> None:
        async with self._http() as client:
            session = McpSession(client, self.settings.url, self._on_message)
            async with asyncio.timeout(self.settings.connect_timeout_s):
                await session.initialize()
                tools = await session.list_tools()
            listener = asyncio.create_task(self._listen(session))
            try:
                self._ended = asyncio.Event()
                self._session = session
                self._broken.clear()
                self.tools = tools
                self.connects += 1
                self._set_state("up", tools=len(self.tools))
                self._up.set()
                self._ready.set()
                self._on_tools()
                while not self._broken.is_set():
                    try:
                        await asyncio.wait_for(self._broken.wait(), PING_INTERVAL_S)
                    except TimeoutError:
                        async with asyncio.timeout(self.settings.connect_timeout_s):
                            await session.ping()
            finally:
                listener.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await listener
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(session.close(), 2)
            raise _Broken(self._broken_reason or "connection lost")

    async def _listen(self, session: McpSession) -> None:
        """Follow the server's own event stream, if it keeps one; its end means trouble."""
        try:
            await session.listen()
        except McpTransportError as exc:
            self._broken_reason = str(exc)
            self._broken.set()

    def _on_message(self, message: dict[str, Any]) -> None:
        if message.get("method") == "notifications/tools/list_changed":
            self._relist = asyncio.create_task(self._refresh())

    async def _refresh(self) -> None:
        session = self._session
        if session is None:
            return
        try:
            async with asyncio.timeout(self.settings.call_timeout_s):
                tools = await session.list_tools()
        except Exception as exc:  # the supervisor reconnects and lists again
            self._trace.emit("mcp_state", server=self.name, state="relist_failed", error=str(exc))
            return
        self.tools = tools
        self._trace.emit(
            "mcp_state", server=self.name, state="tools_changed", tools=len(self.tools)
        )
        self._on_tools()

    async def call(self, tool: str, arguments: dict[str, Any]) -> str:
        session, ended = self._session, self._ended
        if session is None or self.state != "up":
            raise self._unavailable()
        timeout = self.settings.call_timeout_s
        # The call races the session's end as well as its own timeout, so a call in flight
        # when the supervisor gives the session up is answered at once.
        request = asyncio.ensure_future(session.call_tool(tool, arguments))
        watcher = asyncio.ensure_future(ended.wait())
        try:
            await asyncio.wait(
                {request, watcher}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            watcher.cancel()
        if not request.done():
            request.cancel()
            if ended.is_set():
                raise self._unavailable()
            raise ToolFailure(f"{tool} timed out after {timeout:g}s", kind="timeout")
        try:
            result = request.result()
        except McpRemoteError as exc:
            raise ToolFailure(f"{tool}: {exc.message}", kind="tool_error") from None
        except Exception as exc:  # transport trouble: this call fails, the supervisor heals
            self._broken_reason = str(exc)
            self._broken.set()
            self._trace.emit("mcp_state", server=self.name, state="call_failed", error=str(exc))
            raise self._unavailable() from None
        text = result_text(result)
        if result.get("isError"):
            raise ToolFailure(text or f"{tool} failed", kind="tool_error")
        return text

    def _unavailable(self) -> ToolFailure:
        return ToolFailure(f"server {self.name} unavailable, retry later", kind="unavailable")


def _describe(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_describe(e) for e in exc.exceptions)
    return f"{type(exc).__name__}: {exc}"


class McpHub:
    """All MCP servers of an agent, and the names their tools are exposed under."""

    def __init__(
        self,
        servers: list[McpServerSettings],
        registry: ToolRegistry,
        trace: TraceWriter,
        *,
        namespaced: bool = False,
    ) -> None:
        """``namespaced`` exposes every tool as ``<server>__<tool>`` (the standalone
        agent's names); otherwise a tool keeps its bare name unless another has it."""
        self._registry = registry
        self._namespaced = namespaced
        self.servers = {s.name: McpServer(s, trace, self._register) for s in servers}
        self.name_map: dict[str, tuple[str, str]] = {}

    async def start(self, ready_timeout: float) -> list[str]:
        """Connect every server; return the names of those not up within ``ready_timeout``."""
        for server in self.servers.values():
            server.start()
        await asyncio.gather(*(s.wait_ready(ready_timeout) for s in self.servers.values()))
        return [name for name, s in self.servers.items() if s.state != "up"]

    async def ensure_up(self, timeout: float) -> list[str]:
        """Give every server that is down a prompt chance to reconnect (see the module
        docstring); return the names still down after ``timeout``."""
        down = [s for s in self.servers.values() if s.state != "up"]
        if down:
            await asyncio.gather(*(s.ensure_up(timeout) for s in down))
        return [s.name for s in down if s.state != "up"]

    async def close(self) -> None:
        await asyncio.gather(*(s.close() for s in self.servers.values()))

    def _offered(self, server: McpServer) -> list[McpTool]:
        include = server.settings.include
        return [
            t
            for t in server.tools
            if (include is None or t.name in include) and t.name not in server.settings.exclude
        ]

    def _register(self) -> None:
        counts: dict[str, int] = {}
        for server in self.servers.values():
            for tool in self._offered(server):
                counts[tool.name] = counts.get(tool.name, 0) + 1
        builtin = set(self._registry.builtin_names())
        for server in self.servers.values():
            defs = []
            for tool in self._offered(server):
                bare = counts[tool.name] == 1 and tool.name not in builtin
                if self._namespaced:
                    name = exposed_name(server.name, tool.name, prefix="")
                else:
                    name = tool.name if bare else exposed_name(server.name, tool.name)
                self.name_map[name] = (server.name, tool.name)
                defs.append(
                    ToolDefinition(
                        name=name,
                        description=tool.description or tool.name,
                        parameters=tool.input_schema or {"type": "object"},
                        handler=_handler(server, tool.name),
                        # The MCP layer's own timeout answers first, with a clearer message.
                        timeout_s=server.settings.call_timeout_s + 5,
                        source=f"mcp:{server.name}",
                    )
                )
            self._registry.replace_source(server.name, defs)


def _handler(server: McpServer, tool: str) -> Callable[[dict[str, Any]], Any]:
    async def call(arguments: dict[str, Any]) -> str:
        return await server.call(tool, arguments)

    return call
