"""``web_fetch``, executed on the host with every SSRF defence.

Each hop: http/https only, no credentials in the URL, the host allowlist, then
DNS — refused if ANY address is not public — then a connection to that vetted
address carrying the original Host header and TLS server name, so a second DNS
answer can never redirect the request. At most three redirects, each vetted
again. No cookies, no proxy variables, a 10 s deadline for the whole fetch, a
256 KB body cap, and only text, JSON or XML bodies.

The deadline bounds every blocking step (name lookup, connect, TLS handshake, each send
and each read), not each step anew: a server trickling one byte at a time, or a name
server answering late, cannot hold the fetch, and the worker thread it runs on, past it.
A lookup cannot be interrupted, so it runs on a small pool of its own and is abandoned
at the deadline; the pool's size bounds how many threads late answers can hold.

The address policy and the resolver are parameters so tests can fetch from a
loopback server with an explicit policy; production callers use the defaults.
"""

from __future__ import annotations

import fnmatch
import http.client
import io
import ipaddress
import re
import select
import socket
import ssl
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any
from urllib.parse import SplitResult, urljoin, urlsplit

from realms.realmtools.errors import Refusal

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
AddressPolicy = Callable[[IPAddress], bool]
Resolver = Callable[[str, int], list[str]]

TIMEOUT_S = 10.0
MAX_BYTES = 256 * 1024
MAX_REDIRECTS = 3
PASSAGE = 400
MAX_PASSAGES = 20
USER_AGENT = "bearpit-web-fetch/1"
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_TEXT_TYPES = frozenset({"application/json", "application/xml", "application/xhtml+xml"})


def is_public_address(ip: IPAddress) -> bool:
    """Only globally routable unicast addresses; IPv4-mapped IPv6 is refused outright."""
    if isinstance(ip, ipaddress.IPv6Address) and (
        ip.ipv4_mapped is not None or ip.sixtofour is not None or ip.teredo is not None
    ):
        return False
    return bool(
        ip.is_global
        and not ip.is_private
        and not ip.is_loopback
        and not ip.is_link_local
        and not ip.is_multicast
        and not ip.is_reserved
        and not ip.is_unspecified
    )


def policy_allowing(addresses: Iterable[str]) -> AddressPolicy:
    """The default policy, plus the exact addresses an operator named as reachable."""
    named = frozenset(ipaddress.ip_address(a) for a in addresses)
    if not named:
        return is_public_address
    return lambda ip: ip in named or is_public_address(ip)


def system_resolve(host: str, port: int) -> list[str]:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise Refusal(f"cannot resolve {host}: {exc.strerror}") from None
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def _parts(url: str) -> tuple[SplitResult, str, int]:
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError as exc:
        raise Refusal(f"not a valid URL: {exc}") from None
    if parts.scheme not in ("http", "https"):
        raise Refusal("only http and https URLs can be fetched")
    if parts.username is not None or parts.password is not None:
        raise Refusal("URLs with credentials are refused")
    host = (parts.hostname or "").rstrip(".").lower()
    if not host:
        raise Refusal("the URL has no host")
    return parts, host, port or (443 if parts.scheme == "https" else 80)


_LOOKUPS = ThreadPoolExecutor(max_workers=4, thread_name_prefix="web-fetch-dns")


def _within(resolve: Resolver, deadline: float, too_slow: str) -> Resolver:
    """``resolve``, given up on (with a refusal) at ``deadline``."""

    def bounded(host: str, port: int) -> list[str]:
        future = _LOOKUPS.submit(resolve, host, port)
        try:
            return future.result(timeout=max(0.0, deadline - time.monotonic()))
        except FutureTimeout:
            future.cancel()
            raise Refusal(too_slow) from None

    return bounded


def _vet(host: str, port: int, policy: AddressPolicy, resolve: Resolver) -> str:
    try:
        addresses = [host] if ipaddress.ip_address(host) else []
    except ValueError:
        addresses = resolve(host, port)
    if not addresses:
        raise Refusal(f"{host} has no address")
    for text in addresses:
        ip = ipaddress.ip_address(text.split("%", 1)[0])
        if not policy(ip):
            raise Refusal(f"{host} resolves to a non-public address ({ip}); refused")
    return addresses[0]


def _allowed(host: str, allow: Sequence[str]) -> bool:
    return not allow or any(fnmatch.fnmatch(host, pattern.lower()) for pattern in allow)


class _FetchTimeout(Exception):
    """The whole-fetch deadline passed."""


class _DeadlineSocket:
    """A connected socket whose every send and receive waits at most until one
    deadline; http.client reads headers and body through :meth:`makefile`."""

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        self._sock = sock
        self._deadline = deadline
        # As socket.socket does: the connection may close its socket while the
        # response still reads through the file made from it.
        self._files = 0
        self._closed = False

    def _arm(self) -> None:
        remaining = self._deadline - time.monotonic()
        if remaining <= 0:
            raise _FetchTimeout
        self._sock.settimeout(remaining)

    def recv_into(self, buffer: Any, nbytes: int = 0, flags: int = 0) -> int:
        self._arm()
        try:
            return self._sock.recv_into(buffer, nbytes, flags)
        except TimeoutError:
            raise _FetchTimeout from None

    def recv(self, size: int, flags: int = 0) -> bytes:
        self._arm()
        try:
            return self._sock.recv(size, flags)
        except TimeoutError:
            raise _FetchTimeout from None

    def sendall(self, data: Any, flags: int = 0) -> None:
        self._arm()
        try:
            self._sock.sendall(data, flags)
        except TimeoutError:
            raise _FetchTimeout from None

    def makefile(self, mode: str = "rb", *args: Any, **kwargs: Any) -> io.BufferedReader:
        if mode != "rb":
            raise ValueError("only binary reading is supported")
        self._files += 1
        return io.BufferedReader(socket.SocketIO(self, "rb"))  # type: ignore[arg-type]

    def _decref_socketios(self) -> None:
        self._files = max(0, self._files - 1)
        if self._closed and not self._files:
            self._sock.close()

    def close(self) -> None:
        self._closed = True
        if not self._files:
            self._sock.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sock, name)


def _tls_handshake(sock: socket.socket, host: str, deadline: float) -> ssl.SSLSocket:
    """TLS over ``sock`` with the handshake bounded by ``deadline`` as a whole."""
    context = ssl.create_default_context()
    tls = context.wrap_socket(sock, server_hostname=host, do_handshake_on_connect=False)
    tls.setblocking(False)
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            tls.close()
            raise _FetchTimeout
        try:
            tls.do_handshake()
            return tls
        except ssl.SSLWantReadError:
            select.select([tls], [], [], remaining)
        except ssl.SSLWantWriteError:
            select.select([], [tls], [], remaining)


class _PinnedConnection(http.client.HTTPConnection):
    """An HTTP(S) connection to a vetted address, named by the original host, every
    step of which ends at the fetch's deadline."""

    def __init__(self, host: str, port: int, address: str, tls: bool, deadline: float) -> None:
        super().__init__(host, port, timeout=max(0.001, deadline - time.monotonic()))
        self._address = address
        self._tls = tls
        self._deadline = deadline

    def connect(self) -> None:
        remaining = self._deadline - time.monotonic()
        if remaining <= 0:
            raise _FetchTimeout
        try:
            sock = socket.create_connection((self._address, self.port), timeout=remaining)
        except TimeoutError:
            raise _FetchTimeout from None
        if self._tls:
            sock = _tls_handshake(sock, self.host, self._deadline)
        self.sock = _DeadlineSocket(sock, self._deadline)


def _media_type(header: str) -> str:
    return header.split(";", 1)[0].strip().lower()


def _is_text(media: str) -> bool:
    return (
        media.startswith("text/")
        or media in _TEXT_TYPES
        or media.endswith("+json")
        or media.endswith("+xml")
    )


def _charset(header: str) -> str:
    match = re.search(r"charset=([\w.:-]+)", header, re.I)
    return match.group(1) if match else "utf-8"


def _passages(text: str, phrase: str) -> tuple[str, int]:
    spans: list[list[int]] = []
    lowered, needle = text.lower(), phrase.lower()
    start = lowered.find(needle)
    count = 0
    while start != -1:
        count += 1
        lo, hi = max(0, start - PASSAGE), min(len(text), start + len(needle) + PASSAGE)
        if spans and lo <= spans[-1][1]:
            spans[-1][1] = hi
        else:
            spans.append([lo, hi])
        start = lowered.find(needle, start + len(needle))
    return "\n…\n".join(text[lo:hi] for lo, hi in spans[:MAX_PASSAGES]), count


def fetch(
    url: str,
    *,
    allow: Sequence[str] = (),
    contains: str | None = None,
    policy: AddressPolicy = is_public_address,
    resolve: Resolver = system_resolve,
    timeout: float = TIMEOUT_S,
    max_bytes: int = MAX_BYTES,
) -> dict[str, Any]:
    """Fetch one URL; refusals and network failures raise :class:`Refusal`."""
    deadline = time.monotonic() + timeout
    current = url
    redirects = 0
    while True:
        parts, host, port = _parts(current)
        if not _allowed(host, allow):
            raise Refusal(f"{host} is not on this realm's web_fetch allowlist")
        too_slow = f"the fetch did not finish within {timeout:g} seconds"
        address = _vet(host, port, policy, _within(resolve, deadline, too_slow))
        if time.monotonic() >= deadline:
            raise Refusal(too_slow)
        conn = _PinnedConnection(host, port, address, parts.scheme == "https", deadline)
        try:
            path = parts.path or "/"
            conn.request(
                "GET",
                f"{path}?{parts.query}" if parts.query else path,
                headers={
                    "User-Agent": USER_AGENT,
                    "Accept": "text/*, application/json, application/xml;q=0.9",
                    "Accept-Encoding": "identity",
                },
            )
            response = conn.getresponse()
            location = response.getheader("Location")
            if response.status in _REDIRECTS and location:
                redirects += 1
                if redirects > MAX_REDIRECTS:
                    raise Refusal(f"more than {MAX_REDIRECTS} redirects; stopped")
                current = urljoin(current, location)
                continue
            header = response.getheader("Content-Type") or ""
            media = _media_type(header)
            if not _is_text(media):
                raise Refusal(f"content type {media or 'unknown'!r} is not text, JSON or XML")
            body = bytearray()
            while len(body) <= max_bytes:
                chunk = response.read1(min(65536, max_bytes + 1 - len(body)))
                if not chunk:
                    break
                body.extend(chunk)
        except _FetchTimeout:
            raise Refusal(too_slow) from None
        except (OSError, http.client.HTTPException) as exc:
            raise Refusal(f"fetching {host} failed: {exc}") from None
        finally:
            conn.close()
        truncated = len(body) > max_bytes
        raw = bytes(body[:max_bytes])
        try:
            text = raw.decode(_charset(header), errors="replace")
        except LookupError:
            text = raw.decode("utf-8", errors="replace")
        result: dict[str, Any] = {
            "url": current,
            "status": response.status,
            "redirects": redirects,
            "bytes": len(raw),
            "truncated": truncated,
            "content_type": media,
            "text": text,
        }
        if contains:
            result["text"], result["matches"] = _passages(text, contains)
        return result
