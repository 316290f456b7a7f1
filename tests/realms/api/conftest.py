"""What the realm route tests share: an authenticated client and a local worker."""

from __future__ import annotations

import json
import queue
from collections.abc import Iterator

import pytest

from realms.services.queue import close_local_worker, open_local_worker

TOKEN = "test-operator-token-routes-0123"


class Api:
    def __init__(self, client) -> None:
        self.client = client

    def get(self, path, **kw):
        return self.client.get(path, HTTP_AUTHORIZATION=f"Bearer {TOKEN}", **kw)

    def post(self, path, data=None, **kw):
        return self.client.post(
            path,
            data=json.dumps({} if data is None else data),
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {TOKEN}",
            **kw,
        )


@pytest.fixture
def routes_api(client, settings, tmp_path) -> Api:
    settings.BEARPIT_HOME = tmp_path
    settings.BEARPIT_API_TOKEN = TOKEN
    return Api(client)


@pytest.fixture
def local_worker() -> Iterator[queue.Queue[str]]:
    """This process as the worker, as pit_serve makes it: launched ids arrive here."""
    inbox = open_local_worker()
    yield inbox
    close_local_worker()


def drained(inbox: queue.Queue[str]) -> list[str]:
    out = []
    while not inbox.empty():
        out.append(inbox.get_nowait())
    return out
