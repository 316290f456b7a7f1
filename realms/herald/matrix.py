"""A small Matrix client-server API client, speaking as the application service.

Everything goes out with the as_token; ``user_id=`` makes the homeserver treat the
request as that namespace user (the gate module and power levels apply to it
exactly as to the agent itself).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import quote

import httpx
from django.conf import settings

from realms.herald.config import Registration, load_registration


class MatrixError(Exception):
    """The homeserver refused or failed a request.

    ``retryable`` says whether trying again later can help (rate limits, server
    errors, an unreachable homeserver); refusals such as 403 are final.
    """

    def __init__(self, status: int, errcode: str, message: str, *, what: str) -> None:
        self.status = status
        self.errcode = errcode
        self.message = message
        self.retryable = status == 0 or status == 429 or status >= 500
        super().__init__(f"{what}: {status} {errcode}: {message}")


@dataclass(frozen=True)
class Login:
    access_token: str
    device_id: str


# Over the Unix socket Synapse has no client IP; some endpoints (registration) need
# one, and the socket listener honours X-Forwarded-For.
UDS_HEADERS = {"X-Forwarded-For": "127.0.0.1", "X-Forwarded-Proto": "http"}


def _q(value: str) -> str:
    return quote(value, safe="")


class MatrixClient:
    def __init__(
        self,
        *,
        registration: Registration,
        server_name: str,
        base_url: str | None = None,
        socket_path: Path | None = None,
        timeout: float = 30.0,
    ) -> None:
        if (base_url is None) == (socket_path is None):
            raise ValueError("give exactly one of base_url and socket_path")
        self.registration = registration
        self.server_name = server_name
        # Over the socket the URL is plain http:// to our own homeserver: no TLS context
        # (httpx would load the whole CA bundle, ~20 ms per client, for nothing).
        transport = httpx.HTTPTransport(uds=str(socket_path), verify=False) if socket_path else None
        self._http = httpx.Client(
            base_url=base_url or "http://homeserver",
            transport=transport,
            verify=socket_path is None,
            trust_env=socket_path is None,
            timeout=timeout,
            headers={"Authorization": f"Bearer {registration.as_token}", **UDS_HEADERS}
            if socket_path
            else {"Authorization": f"Bearer {registration.as_token}"},
        )

    def __enter__(self) -> MatrixClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    @property
    def system_user_id(self) -> str:
        return self.mxid(self.registration.sender_localpart)

    def mxid(self, localpart: str) -> str:
        return f"@{localpart}:{self.server_name}"

    def request(
        self,
        method: str,
        path: str,
        *,
        body: dict[str, Any] | None = None,
        user_id: str | None = None,
        token: str | None = None,
        what: str = "",
    ) -> dict[str, Any]:
        params = {"user_id": user_id} if user_id else None
        headers = {"Authorization": f"Bearer {token}"} if token else None
        what = what or f"{method} {path.split('?')[0]}"
        try:
            response = self._http.request(method, path, json=body, params=params, headers=headers)
        except httpx.HTTPError as exc:
            raise MatrixError(
                0, "M_UNREACHABLE", str(exc) or type(exc).__name__, what=what
            ) from exc
        try:
            data = response.json()
        except ValueError:
            data = {}
        if response.status_code >= 400:
            if not isinstance(data, dict):
                data = {}
            raise MatrixError(
                response.status_code,
                str(data.get("errcode", "M_UNKNOWN")),
                str(data.get("error", response.text[:200])),
                what=what,
            )
        return data if isinstance(data, dict) else {}

    # -- users ------------------------------------------------------------------

    def register(self, localpart: str) -> str:
        """Register a namespace user (no token); an existing user is fine."""
        try:
            self.request(
                "POST",
                "/_matrix/client/v3/register",
                body={
                    "type": "m.login.application_service",
                    "username": localpart,
                    "inhibit_login": True,
                },
                what=f"register {localpart}",
            )
        except MatrixError as exc:
            if exc.errcode != "M_USER_IN_USE":
                raise
        return self.mxid(localpart)

    def register_and_login(self, localpart: str) -> tuple[str, Login]:
        """Register a namespace user and take its first token in the same call; a user
        that already exists (a resumed run) gets a new token from a login instead."""
        try:
            data = self.request(
                "POST",
                "/_matrix/client/v3/register",
                body={"type": "m.login.application_service", "username": localpart},
                what=f"register {localpart}",
            )
        except MatrixError as exc:
            if exc.errcode != "M_USER_IN_USE":
                raise
            return self.mxid(localpart), self.login(localpart)
        login = Login(access_token=str(data["access_token"]), device_id=str(data["device_id"]))
        return self.mxid(localpart), login

    def login(self, localpart: str, device_id: str | None = None) -> Login:
        body: dict[str, Any] = {
            "type": "m.login.application_service",
            "identifier": {"type": "m.id.user", "user": localpart},
        }
        if device_id:
            body["device_id"] = device_id
        data = self.request("POST", "/_matrix/client/v3/login", body=body, what="login")
        return Login(access_token=str(data["access_token"]), device_id=str(data["device_id"]))

    def set_displayname(self, user_id: str, name: str) -> None:
        self.request(
            "PUT",
            f"/_matrix/client/v3/profile/{_q(user_id)}/displayname",
            body={"displayname": name},
            user_id=user_id,
            what=f"set display name of {user_id}",
        )

    def deactivate(self, user_id: str) -> None:
        self.request(
            "POST",
            "/_matrix/client/v3/account/deactivate",
            body={"erase": False},
            user_id=user_id,
            what=f"deactivate {user_id}",
        )

    # -- rooms ------------------------------------------------------------------

    def create_room(self, body: dict[str, Any], *, user_id: str | None = None) -> str:
        data = self.request(
            "POST", "/_matrix/client/v3/createRoom", body=body, user_id=user_id, what="create room"
        )
        return str(data["room_id"])

    def invite(self, room_id: str, invitee: str, *, user_id: str | None = None) -> None:
        self.request(
            "POST",
            f"/_matrix/client/v3/rooms/{_q(room_id)}/invite",
            body={"user_id": invitee},
            user_id=user_id,
            what=f"invite {invitee}",
        )

    def join(self, room_id: str, user_id: str) -> None:
        self.request(
            "POST",
            f"/_matrix/client/v3/join/{_q(room_id)}",
            body={},
            user_id=user_id,
            what=f"join {user_id} to {room_id}",
        )

    def kick(self, room_id: str, user_id: str, reason: str) -> None:
        self.request(
            "POST",
            f"/_matrix/client/v3/rooms/{_q(room_id)}/kick",
            body={"user_id": user_id, "reason": reason},
            what=f"kick {user_id}",
        )

    def leave(self, room_id: str, user_id: str | None = None) -> None:
        self.request(
            "POST",
            f"/_matrix/client/v3/rooms/{_q(room_id)}/leave",
            body={},
            user_id=user_id,
            what=f"leave {room_id}",
        )

    def joined_members(self, room_id: str) -> set[str]:
        data = self.request(
            "GET", f"/_matrix/client/v3/rooms/{_q(room_id)}/joined_members", what="members"
        )
        return set(data.get("joined", {}))

    def get_state(self, room_id: str, event_type: str, state_key: str = "") -> dict[str, Any]:
        return self.request(
            "GET",
            f"/_matrix/client/v3/rooms/{_q(room_id)}/state/{_q(event_type)}/{_q(state_key)}",
            what=f"read {event_type}",
        )

    def put_state(
        self, room_id: str, event_type: str, content: dict[str, Any], state_key: str = ""
    ) -> str:
        data = self.request(
            "PUT",
            f"/_matrix/client/v3/rooms/{_q(room_id)}/state/{_q(event_type)}/{_q(state_key)}",
            body=content,
            what=f"set {event_type}",
        )
        return str(data.get("event_id", ""))

    def send(
        self,
        room_id: str,
        content: dict[str, Any],
        *,
        user_id: str | None = None,
        event_type: str = "m.room.message",
        txn_id: str | None = None,
    ) -> str:
        txn = txn_id or secrets.token_hex(12)
        data = self.request(
            "PUT",
            f"/_matrix/client/v3/rooms/{_q(room_id)}/send/{_q(event_type)}/{txn}",
            body=content,
            user_id=user_id,
            what=f"send to {room_id}",
        )
        return str(data["event_id"])

    def messages(
        self, room_id: str, *, from_token: str | None = None, limit: int = 100
    ) -> dict[str, Any]:
        """One page of the room's timeline, newest first (``dir=b``)."""
        query = f"dir=b&limit={limit}" + (f"&from={_q(from_token)}" if from_token else "")
        return self.request(
            "GET", f"/_matrix/client/v3/rooms/{_q(room_id)}/messages?{query}", what="history"
        )

    # -- application service ----------------------------------------------------

    def ping(self, transaction_id: str | None = None) -> int:
        """Ask the homeserver to reach our endpoint now; returns its round-trip in ms."""
        body = {"transaction_id": transaction_id} if transaction_id else {}
        data = self.request(
            "POST",
            f"/_matrix/client/v1/appservice/{_q(self.registration.id)}/ping",
            body=body,
            what="ping",
        )
        return int(data.get("duration_ms", 0))


def matrix_client(*, timeout: float = 30.0) -> MatrixClient:
    """The client for the configured homeserver (external URL or the embedded socket)."""
    registration = load_registration()
    if settings.BEARPIT_MATRIX_URL:
        return MatrixClient(
            registration=registration,
            server_name=settings.BEARPIT_MATRIX_SERVER_NAME,
            base_url=settings.BEARPIT_MATRIX_URL,
            timeout=timeout,
        )
    return MatrixClient(
        registration=registration,
        server_name=settings.BEARPIT_MATRIX_SERVER_NAME,
        socket_path=Path(settings.BEARPIT_HOME) / "run" / "homeserver.sock",
        timeout=timeout,
    )
