"""The OpenAPI document describes every ``/api/`` route, generates without a warning,
and its docs page works offline: every asset it loads is served here, none from a CDN."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from django.core.management import call_command

from tests.bearpit.test_auth_matrix import api_routes

pytestmark = [pytest.mark.timeout(120), pytest.mark.django_db]

TOKEN = "test-operator-token-openapi-0123456789"
BEARER = {"HTTP_AUTHORIZATION": f"Bearer {TOKEN}"}
_NOT_DESCRIBED = {"/api/schema/", "/api/docs/"}  # the document and its viewer


@pytest.fixture(autouse=True)
def _settings(settings, tmp_path):
    settings.BEARPIT_HOME = tmp_path
    settings.BEARPIT_API_TOKEN = TOKEN


def served_schema(client):
    response = client.get("/api/schema/?format=json", **BEARER)
    assert response.status_code == 200, response.content[:300]
    assert response["Content-Type"].startswith("application/vnd.oai.openapi+json")
    return dict(response.json())


def test_the_schema_generates_and_validates_without_a_warning(tmp_path: Path):
    out = tmp_path / "schema.yaml"
    # Warnings (an untyped field, an operation id two routes share, an unknown
    # authenticator) fail the command, and so this test.
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(out))
    document = yaml.safe_load(out.read_text())
    assert document["openapi"].startswith("3.")
    ids = [op["operationId"] for item in document["paths"].values() for op in item.values()]
    assert len(ids) == len(set(ids))


def test_every_api_route_is_described_and_needs_the_operator(client):
    document = served_schema(client)
    described = {re.sub(r"\{[^}]+\}", "x", p) for p in document["paths"]}
    routes = {r.path for r in api_routes()} - _NOT_DESCRIBED
    assert routes - described == set()
    schemes = document["components"]["securitySchemes"]
    assert schemes["operatorToken"] == {
        "type": "http",
        "scheme": "bearer",
        "description": schemes["operatorToken"]["description"],
    }
    assert schemes["operatorSession"]["in"] == "cookie"
    for path, item in document["paths"].items():
        for method, op in item.items():
            assert {"operatorToken": []} in op["security"], (method, path)
            assert {} not in op["security"], f"{method} {path} is open to anyone"


def test_the_settings_routes_are_typed(client):
    document = served_schema(client)
    components = document["components"]["schemas"]
    get = document["paths"]["/api/settings"]["get"]
    ref = get["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
    page = components[ref.rsplit("/", 1)[1]]
    assert {"providers", "keys", "capacity", "sandbox", "tools"} <= set(page["required"])
    put = document["paths"]["/api/settings/model-config"]["put"]
    body = put["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    assert components[body.rsplit("/", 1)[1]]["required"] == ["providers"]
    tier = components["ProviderTierEdit"]
    assert tier["required"] == ["model"]
    assert tier["properties"]["input_cost_per_token"]["maximum"] == 1
    assert components["TierEffortEnum"]["enum"] == ["low", "medium", "high", "xhigh", "max"]


def test_the_docs_page_loads_only_local_assets(client):
    assert client.get("/api/docs/").status_code == 401
    assert client.get("/api/schema/").status_code == 401
    assert client.get(f"/login?token={TOKEN}").status_code == 303
    page = client.get("/api/docs/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "SwaggerUIBundle" in html
    assert '"/api/schema/"' in html
    assets = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert len(assets) >= 3, assets
    for asset in assets:
        assert asset.startswith("/static/"), f"{asset} is not served by this installation"
        fetched = client.get(asset)
        assert fetched.status_code == 200, asset
        assert b"".join(fetched.streaming_content if fetched.streaming else [fetched.content])
    assert not re.search(r"https?://", html.replace("http://www.w3.org", "")), html[:500]
    # The schema the page loads comes with the session the page was opened with.
    assert client.get("/api/schema/?format=json").status_code == 200
