"""What the realm route tests share: an authenticated client and a local worker."""

from __future__ import annotations

import json
import queue
from typing import Any

import jsonschema
import pytest
from drf_spectacular.generators import SchemaGenerator

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


def drained(inbox: queue.Queue[str]) -> list[str]:
    out = []
    while not inbox.empty():
        out.append(inbox.get_nowait())
    return out


def _json_schema(node: Any) -> Any:
    """OpenAPI 3.0's ``nullable`` as JSON Schema's null type."""
    if isinstance(node, list):
        return [_json_schema(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = {k: _json_schema(v) for k, v in node.items() if k != "nullable"}
    if node.get("nullable"):
        if "type" in out:
            out["type"] = [out["type"], "null"]
        elif "$ref" in out or "allOf" in out or "oneOf" in out:
            out = {"anyOf": [out, {"type": "null"}]}
    return out


@pytest.fixture(scope="session")
def openapi() -> dict[str, Any]:
    schema: dict[str, Any] = _json_schema(SchemaGenerator().get_schema(request=None, public=True))
    return schema


def check_answer(openapi, path: str, method: str, status: int, body: Any) -> None:
    operation = openapi["paths"][path][method]
    content = operation["responses"][str(status)]["content"]["application/json"]
    schema = {**content["schema"], "components": openapi["components"]}
    jsonschema.validate(body, schema)
