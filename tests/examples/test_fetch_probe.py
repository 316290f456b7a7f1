"""examples/fetch-probe: a granted web_fetch under a quota, reading a page the test serves."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.e2e.test_mechanics_run import assert_clean_ending, run_realm

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "fetch-probe"
# A release no model remembers: the scout can only have it from the page.
PAGE = b"""<html><head><title>Downloads</title></head><body>
<h1>Download the latest version</h1>
<p><a class="button" href="/ftp/3.99.1/">Download Python 3.99.1</a></p>
<p>Looking for a pre-release? Python 4.0.0a1 is in testing.</p>
</body></html>
"""


class _Site(BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_GET(self) -> None:
        type(self).hits.append(self.path)
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(PAGE)))
        self.end_headers()
        self.wfile.write(PAGE)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def site() -> Iterator[str]:
    _Site.hits = []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Site)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/downloads/"
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_fetch_probe_reports_the_page_and_the_quota_refuses_a_third_fetch(
    tmp_path: Path, site: str
) -> None:
    # web_fetch refuses every non-public address; the platform's setting names the local
    # server as reachable, the only way a realm run from the command line can reach it.
    run = run_realm(
        tmp_path,
        EXAMPLE,
        timeout=150,
        args=["-p", f"url={site}"],
        BEARPIT_WEB_FETCH_ALLOW_ADDRESSES="127.0.0.1",
    )
    assert_clean_ending(run, "message")
    chron = run.chron
    running = chron.kinds("lifecycle")[1]
    assert running["config"]["parameters"]["url"] == site
    assert running["config"]["realmtools"] is True

    # Two fetches reached the page; the third was refused by the quota before any network.
    assert _Site.hits == ["/downloads/", "/downloads/"]
    calls = [(c["agent"], c["tool"], c["args"]) for c in chron.kinds("tool_call")]
    assert calls == [
        ("scout", "web_fetch", {"url": site, "contains": "Download Python"}),
        ("scout", "web_fetch", {"url": site}),
    ]
    results = chron.kinds("tool_result")
    assert [(r["ok"], r["result"]["status"], r["result"]["bytes"]) for r in results] == [
        (True, 200, len(PAGE)),
        (True, 200, len(PAGE)),
    ]
    assert results[0]["result"]["matches"] == 1
    attempts = [
        t["data"]["name"]
        for t in chron.kinds("trace")
        if t["agent_id"] == "scout" and t["type"] == "tool_call"
    ]
    assert attempts.count("web_fetch") == 3

    notes = [n["text"] for n in chron.kinds("note")]
    assert notes == [
        f'the page offers Python 3.99.1 ("Download Python 3.99.1", {site})',
        "third fetch: web_fetch quota used up: 2 of 2 calls in this realm",
    ]
    assert run.said("scout") == [f"FACT: {notes[0]}. My third fetch was refused ({notes[1]})."]
    (concluding,) = [p for p in chron.kinds("lifecycle") if p["event"] == "concluding"]
    assert concluding["detail"] == "1 message(s) match '^FACT:' (last from scout)"
