"""A real MCP server for the client tests: FastMCP, streamable HTTP, bearer auth.

Stateless by default, as realmtools is; ``stateful=True`` gives sessions and the server's
own event stream, which carries notifications not tied to a request.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from mcp import types
from mcp.server.fastmcp import Context, FastMCP
from mcp.server.transport_security import TransportSecuritySettings

TOKEN = "mcp-test-bearer-0123456789abcdef"


def build(calls: list[str], *, stateful: bool = False) -> Any:
    server = FastMCP(
        "testtools",
        stateless_http=not stateful,
        streamable_http_path="/mcp",
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )

    @server.tool()
    def submit_sealed(round: str, payload: str) -> str:
        """Seal a payload for a round."""
        calls.append(f"submit_sealed:{round}:{payload}")
        return f"sealed for {round}"

    @server.tool()
    async def slow(seconds: float) -> str:
        """Take a while."""
        calls.append("slow")
        await asyncio.sleep(seconds)
        return "slept"

    @server.tool()
    async def unlock(ctx: Context) -> str:  # type: ignore[type-arg]
        """Add a new tool and tell the client its list changed."""

        def bonus() -> str:
            """A tool that appears later."""
            return "bonus!"

        server.add_tool(bonus, name="bonus")
        await ctx.session.send_notification(
            types.ServerNotification(types.ToolListChangedNotification()),
            related_request_id=ctx.request_id,
        )
        return "unlocked"

    @server.tool()
    def fails() -> str:
        """Always raises."""
        raise ValueError("no such round")

    if stateful:

        @server.tool()
        async def unlock_quietly(ctx: Context) -> str:  # type: ignore[type-arg]
            """Add a tool and announce it outside this request (on the session's own stream)."""

            def extra() -> str:
                """Another tool that appears later."""
                return "extra!"

            server.add_tool(extra, name="extra")
            await ctx.session.send_tool_list_changed()
            return "unlocked quietly"

    app = server.streamable_http_app()

    async def guarded(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = dict(scope["headers"])
            if headers.get(b"authorization") != f"Bearer {TOKEN}".encode():
                body = json.dumps(
                    {
                        "jsonrpc": "2.0",
                        "id": None,
                        "error": {"code": -32001, "message": "bad token"},
                    }
                ).encode()
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [(b"content-type", b"application/json")],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
        await app(scope, receive, send)

    return guarded
