"""A steady stream of posts into a running realm's Commons, to kill a process under.

The sender speaks as the platform's system user over the homeserver's own Unix socket
(as the application service, the way the platform posts) and keeps every event id the
homeserver acknowledged: what a crash must not lose. Its posts mention nobody, so no
agent is woken and the Warden's turns ignore them (they are not an agent's).
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote

import httpx
import yaml


class CommonsSender:
    def __init__(
        self, home: Path, room_id: str, *, every_s: float = 0.05, limit: int = 2000
    ) -> None:
        registration = yaml.safe_load((home / "homeserver" / "registration.yaml").read_text())
        self._client = httpx.Client(
            transport=httpx.HTTPTransport(uds=str(home / "run" / "homeserver.sock")),
            base_url="http://homeserver",
            headers={"Authorization": f"Bearer {registration['as_token']}"},
            timeout=10,
        )
        self._path = f"/_matrix/client/v3/rooms/{quote(room_id, safe='')}/send/m.room.message/"
        self._every_s, self._limit = every_s, limit
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._acked: dict[str, str] = {}  # event id -> body
        self.refused = 0
        self._thread = threading.Thread(target=self._run, name="commons-sender", daemon=True)

    def start(self) -> CommonsSender:
        self._thread.start()
        return self

    def _run(self) -> None:
        for n in range(self._limit):
            if self._stop.is_set():
                return
            body = f"probe {n}"
            try:
                answer = self._client.put(
                    self._path + f"probe-{n}-{time.monotonic_ns()}",
                    json={"msgtype": "m.notice", "body": body},
                )
            except httpx.HTTPError:
                self.refused += 1
            else:
                if answer.status_code == 200:
                    with self._lock:
                        self._acked[str(answer.json()["event_id"])] = body
                else:
                    self.refused += 1
            time.sleep(self._every_s)

    @property
    def acked(self) -> dict[str, str]:
        with self._lock:
            return dict(self._acked)

    def wait_acked(self, count: int, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while len(self.acked) < count:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise AssertionError(f"{len(self.acked)} of {count} posts acknowledged")
            time.sleep(0.05)

    def stop(self) -> dict[str, str]:
        """Stop sending (after the post under way) and return what was acknowledged."""
        self._stop.set()
        self._thread.join(timeout=30)
        self._client.close()
        return self.acked


def wait_until(check: Callable[[], bool], what: str, timeout: float, every_s: float = 0.1) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(every_s)


def assert_exactly_once(acked: dict[str, str], chronicled: list[tuple[str, str]]) -> None:
    """Every acknowledged post is chronicled once, under its own event id, and no
    event id at all is chronicled twice. ``chronicled`` is (event id, body) pairs."""
    counts = Counter(event_id for event_id, _body in chronicled)
    assert {e: n for e, n in counts.items() if n > 1} == {}
    bodies = dict(chronicled)
    missing = sorted((b for e, b in acked.items() if e not in bodies), key=_number)
    assert missing == [], f"{len(missing)} of {len(acked)} acknowledged posts lost"
    assert {e: bodies[e] for e in acked} == acked


def _number(body: str) -> int:
    return int(body.split()[-1])
