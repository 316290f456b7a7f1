"""web_fetch: the SSRF defences of the fetch core, and the granted tool through MCP."""

from __future__ import annotations

import ipaddress
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from chronicle.kinds import Kind
from chronicle.models import Event
from realms.realmtools import webfetch
from realms.realmtools.errors import Refusal

from .conftest import REFEREE

pytestmark = pytest.mark.timeout(60)


class _Handler(BaseHTTPRequestHandler):
    hosts: list[str] = []
    cookies: list[str | None] = []

    def log_message(self, *args):  # keep test output quiet
        pass

    def _send(self, status, ctype, body, headers=()):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        _Handler.hosts.append(self.headers.get("Host", ""))
        _Handler.cookies.append(self.headers.get("Cookie"))
        port = self.server.server_address[1]  # type: ignore[index]
        path = self.path
        if path == "/page":
            self._send(200, "text/html; charset=utf-8", b"<p>alpha beta gamma</p>")
        elif path == "/json":
            self._send(200, "application/json", b'{"ok": true}')
        elif path == "/image":
            self._send(200, "image/png", b"\x89PNG....")
        elif path == "/big":
            self._send(200, "text/plain", b"a" * (300 * 1024))
        elif path == "/hop":
            self._send(302, "text/plain", b"", [("Location", "/page")])
        elif path == "/to-metadata":
            self._send(302, "text/plain", b"", [("Location", "http://169.254.169.254/latest")])
        elif path.startswith("/loop"):
            n = int(path[len("/loop") :] or 0)
            self._send(
                302, "text/plain", b"", [("Location", f"http://127.0.0.1:{port}/loop{n + 1}")]
            )
        elif path == "/cookie":
            self._send(200, "text/plain", b"hi", [("Set-Cookie", "a=b")])
        else:
            self._send(404, "text/plain", b"missing")


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def loopback_only(ip):
    """A test policy: the local test server counts as reachable; nothing else private does."""
    return ip == ipaddress.ip_address("127.0.0.1") or webfetch.is_public_address(ip)


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "10.1.2.3",
        "172.16.0.1",
        "192.168.1.1",
        "169.254.169.254",
        "0.0.0.0",  # noqa: S104 - an address to refuse, not to bind
        "224.0.0.1",
        "240.0.0.1",
        "100.64.0.1",
        "::1",
        "fe80::1",
        "fc00::1",
        "::ffff:8.8.8.8",
        "2002:7f00:1::1",
    ],
)
def test_the_production_policy_refuses_every_non_public_address(address):
    assert not webfetch.is_public_address(ipaddress.ip_address(address))


def test_the_production_policy_accepts_public_addresses():
    for address in ("8.8.8.8", "93.184.216.34", "2606:4700:4700::1111"):
        assert webfetch.is_public_address(ipaddress.ip_address(address))


def test_loopback_targets_are_refused_by_default(site):
    port = site.rsplit(":", 1)[1]
    for url in (f"{site}/page", f"http://localhost:{port}/page", f"http://[::1]:{port}/page"):
        with pytest.raises(Refusal, match="non-public"):
            webfetch.fetch(url)


def test_one_private_answer_among_public_ones_is_enough_to_refuse():
    def resolver(host, port):
        return ["93.184.216.34", "127.0.0.1"]

    with pytest.raises(Refusal, match=r"non-public address \(127.0.0.1\)"):
        webfetch.fetch("http://rebinding.example/", resolve=resolver)


def test_urls_of_the_wrong_kind_are_refused():
    for url, why in (
        ("ftp://example.org/file", "only http"),
        ("file:///etc/passwd", "only http"),
        ("http://user:pw@example.org/", "credentials"),
        ("http:///nohost", "no host"),
    ):
        with pytest.raises(Refusal, match=why):
            webfetch.fetch(url)


def test_a_permitted_fetch_returns_text_and_the_vetted_address_gets_the_original_host(site):
    port = int(site.rsplit(":", 1)[1])
    _Handler.hosts.clear()

    def resolver(host, p):
        assert host == "shop.example"
        return ["127.0.0.1"]

    result = webfetch.fetch(
        f"http://shop.example:{port}/page", policy=loopback_only, resolve=resolver
    )
    assert result == {
        "url": f"http://shop.example:{port}/page",
        "status": 200,
        "redirects": 0,
        "bytes": 23,
        "truncated": False,
        "content_type": "text/html",
        "text": "<p>alpha beta gamma</p>",
    }
    assert _Handler.hosts == [f"shop.example:{port}"]
    assert webfetch.fetch(f"{site}/json", policy=loopback_only)["text"] == '{"ok": true}'


def test_contains_returns_only_the_passages_around_the_phrase(site):
    found = webfetch.fetch(f"{site}/page", policy=loopback_only, contains="BETA")
    assert found["matches"] == 1
    assert "beta" in found["text"]
    missing = webfetch.fetch(f"{site}/page", policy=loopback_only, contains="delta")
    assert (missing["matches"], missing["text"]) == (0, "")


def test_cookies_are_never_sent_back(site):
    _Handler.cookies.clear()
    assert webfetch.fetch(f"{site}/cookie", policy=loopback_only)["text"] == "hi"
    webfetch.fetch(f"{site}/page", policy=loopback_only)
    assert _Handler.cookies == [None, None]


def test_type_and_size_caps(site):
    with pytest.raises(Refusal, match="image/png"):
        webfetch.fetch(f"{site}/image", policy=loopback_only)
    big = webfetch.fetch(f"{site}/big", policy=loopback_only)
    assert big["truncated"] is True
    assert big["bytes"] == 256 * 1024


def test_redirects_are_followed_vetted_and_capped(site):
    hop = webfetch.fetch(f"{site}/hop", policy=loopback_only)
    assert (hop["redirects"], hop["url"], hop["status"]) == (1, f"{site}/page", 200)
    with pytest.raises(Refusal, match=r"169\.254\.169\.254"):
        webfetch.fetch(f"{site}/to-metadata", policy=loopback_only)
    with pytest.raises(Refusal, match="more than 3 redirects"):
        webfetch.fetch(f"{site}/loop0", policy=loopback_only)


def test_the_allowlist_is_checked_on_the_host_before_any_lookup(site):
    def resolver(host, port):
        raise AssertionError("no lookup for a host off the allowlist")

    with pytest.raises(Refusal, match="allowlist"):
        webfetch.fetch("http://evil.example/", allow=["*.example.org"], resolve=resolver)
    ok = webfetch.fetch(f"{site}/page", allow=["127.0.0.*"], policy=loopback_only)
    assert ok["status"] == 200


def _calls(realm):
    return [e.payload for e in Event.objects.filter(realm_id=realm.realm_id, kind=Kind.TOOL_CALL)]


def _results(realm):
    return [e.payload for e in Event.objects.filter(realm_id=realm.realm_id, kind=Kind.TOOL_RESULT)]


def test_the_granted_tool_is_brokered_chronicled_and_rationed(realms, site):
    agents = [
        {"id": "orin", "tools": ["web_fetch"]},
        {"id": "vela", "tools": ["web_fetch"]},
        {"id": "zed"},
        REFEREE,
    ]
    policy = {"max_calls_per_agent": 2, "max_calls_by_agent": {"vela": 0}}
    realm = realms(spec={"tools": {"web_fetch": policy}}, agents=agents)
    orin = realms.agent(realm, "orin")

    refused = orin.call("web_fetch", url=f"{site}/page")
    assert "non-public" in refused["error"]
    port = site.rsplit(":", 1)[1]
    assert "non-public" in orin.call("web_fetch", url=f"http://localhost:{port}/page")["error"]
    assert "quota used up: 2 of 2" in orin.call("web_fetch", url=f"{site}/page")["error"]
    assert [c["agent"] for c in _calls(realm)] == ["orin", "orin"]
    assert [r["ok"] for r in _results(realm)] == [False, False]
    assert _calls(realm)[0]["args"] == {"url": f"{site}/page"}

    vela = realms.agent(realm, "vela")
    assert "quota used up: 0 of 0" in vela.call("web_fetch", url=f"{site}/page")["error"]
    assert "not granted" in realms.agent(realm, "zed").call("web_fetch", url=f"{site}/")["error"]
    assert "url" in orin.call("web_fetch", contains="x")["error"]  # schema-checked
    assert len(_calls(realm)) == 2


def test_the_realm_allowlist_applies_through_the_tool_under_its_legacy_name(realms, site):
    agents = [{"id": "orin", "tools": ["web.fetch"]}, REFEREE]
    realm = realms(spec={"tools": {"web.fetch": {"allow": ["*.example.org"]}}}, agents=agents)
    result = realms.agent(realm, "orin").call("web_fetch", url=f"{site}/page")
    assert "allowlist" in result["error"]
    assert _results(realm)[0]["error"].endswith("allowlist")


class _Trickler:
    """A raw TCP server that sends its reply one byte every ``gap`` seconds, for at most
    ``limit`` seconds, so a stuck fetch cannot keep the test (or the server) alive."""

    def __init__(self, reply: bytes, *, start: int, gap: float = 0.5, limit: float = 20.0):
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.reply, self.start, self.gap, self.limit = reply, start, gap, limit
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        self.server.settimeout(self.limit)
        try:
            conn, _ = self.server.accept()
        except OSError:
            return
        with conn:
            conn.recv(65536)
            ends = time.monotonic() + self.limit
            try:
                conn.sendall(self.reply[: self.start])
                for byte in self.reply[self.start :]:
                    if self.stop.wait(self.gap) or time.monotonic() > ends:
                        return
                    conn.sendall(bytes([byte]))
            except OSError:
                return

    def close(self) -> None:
        self.stop.set()
        self.server.close()
        self.thread.join(timeout=5)


_SLOW_BODY = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 500\r\n\r\n" + (
    b"x" * 500
)


@pytest.mark.parametrize(
    "start", [0, _SLOW_BODY.index(b"\r\n\r\n") + 4], ids=["trickled-headers", "trickled-body"]
)
def test_the_deadline_covers_the_whole_exchange_against_a_trickling_server(start):
    trickler = _Trickler(_SLOW_BODY, start=start)
    outcome: list[object] = []

    def fetch() -> None:
        try:
            outcome.append(
                webfetch.fetch(
                    f"http://127.0.0.1:{trickler.port}/slow", policy=loopback_only, timeout=2.0
                )
            )
        except Refusal as exc:
            outcome.append(exc)

    began = time.monotonic()
    worker = threading.Thread(target=fetch, daemon=True)
    worker.start()
    worker.join(timeout=10)
    elapsed = time.monotonic() - began
    trickler.close()
    assert not worker.is_alive(), "web_fetch was still reading 10 s into a 2 s deadline"
    assert elapsed < 4.0, elapsed
    assert len(outcome) == 1 and isinstance(outcome[0], Refusal), outcome
    assert "did not finish within 2 seconds" in str(outcome[0])


def test_the_deadline_covers_a_name_lookup_that_hangs():
    def slow_dns(host, port):
        time.sleep(4)  # an authoritative server of the agent's that answers late
        return ["127.0.0.1"]

    began = time.monotonic()
    with pytest.raises(Refusal, match="did not finish within 1 seconds"):
        webfetch.fetch("http://slow.example/", resolve=slow_dns, policy=loopback_only, timeout=1)
    assert time.monotonic() - began < 2.5
