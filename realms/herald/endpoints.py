"""Client endpoints refused to agents, at the homeserver.

An agent holds its own access token and may send any request to the homeserver. Most of
the client API is harmless inside a realm's rooms (the gate and power levels decide who
reads and posts), but some endpoints reach past the rooms — to-device messages go to any
user, unchronicled; profiles and directories show other realms — and some store data
on the host without a bound (account data, filters, device keys, key backups, reports).
The platform uses none of them, so requests with a token other than an application
service's (the platform's own) are answered 403 ``M_FORBIDDEN`` before Synapse handles
them.

Synapse has no module callback for most of these, so this module serves the client API
itself: it registers, at ``/_matrix/client``, a resource that wraps Synapse's own client
resource and refuses what :mod:`realms.herald.refusals` lists. Module resources replace
the built-in one at the same path (Synapse's listener set-up adds them last).

Loaded from the gate module inside the homeserver: no Django here.
"""

from __future__ import annotations

import hmac
import logging
from typing import Any

from synapse.http.server import respond_with_json
from synapse.module_api import ModuleApi
from twisted.web.resource import Resource
from twisted.web.server import NOT_DONE_YET

from realms.herald.refusals import CLIENT_PREFIX, refusal

log = logging.getLogger(__name__)


def _token(request: Any) -> str | None:
    headers = request.requestHeaders.getRawHeaders(b"Authorization") or []
    if headers:
        parts = headers[0].split(b" ")
        return parts[1].decode("ascii", "replace") if len(parts) == 2 else None
    query = (request.args or {}).get(b"access_token")
    return query[0].decode("ascii", "replace") if query else None


class RefusingClientResource(Resource):
    """Synapse's client resource, less the endpoints agents may not use."""

    isLeaf = True

    def __init__(self, inner: Resource, platform_tokens: list[str]) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.inner = inner
        self.platform_tokens = [t.encode() for t in platform_tokens]

    def _from_platform(self, request: Any) -> bool:
        token = _token(request)
        if token is None:
            return False
        given = token.encode()
        return any(hmac.compare_digest(given, t) for t in self.platform_tokens)

    def render(self, request: Any) -> Any:
        path = request.path.decode("ascii", "replace")
        what = refusal(path)
        if what is None or self._from_platform(request):
            return self.inner.render(request)  # type: ignore[no-untyped-call]
        log.info("refused %s %s to a client token: %s", request.method, path, what)
        respond_with_json(
            request,
            403,
            {"errcode": "M_FORBIDDEN", "error": f"this bus does not offer {what}"},
            send_cors=True,
        )
        return NOT_DONE_YET


def install(api: ModuleApi) -> None:
    """Serve the client API through :class:`RefusingClientResource`."""
    # Private, but there is no public way to reach Synapse's own client resource; a
    # Synapse that changes it fails at start-up, not open.
    hs = api._hs
    from synapse.rest import ClientRestResource

    tokens = [service.token for service in hs.get_datastores().main.get_app_services()]
    api.register_web_resource(CLIENT_PREFIX, RefusingClientResource(ClientRestResource(hs), tokens))
