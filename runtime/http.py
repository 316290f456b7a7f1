"""The runtime's HTTP transports: over the platform's Unix sockets, or TCP.

httpx builds a TLS context (loading the whole CA bundle) for every transport, which costs
a noticeable share of an agent's start. Over a Unix socket the peer is the platform itself
and the URL is plain ``http://``, so no TLS context is built there; TCP keeps full checks.
"""

from __future__ import annotations

import httpx


def transport(url: str, socket_path: str | None) -> httpx.AsyncHTTPTransport | None:
    """A Unix-socket transport (without TLS set-up for ``http://``), or None for TCP."""
    if not socket_path:
        return None
    return httpx.AsyncHTTPTransport(uds=socket_path, verify=not url.startswith("http://"))
