"""What the Scribe tests share: the real gateway with the scripted provider, and packages.

The scripted provider speaks the OpenAI wire format; each test writes Scribe's replies
as a script (tool calls included), and Scribe calls it through the gateway on its own key.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography.fernet import Fernet

from ledger import keystore
from ledger.gateway.server import GatewayServer
from ledger.services.profiles import seed_profiles

TOKEN = "test-operator-token-scribe-0123"
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def scribe_env(settings: Any, tmp_path: Path) -> Iterator[GatewayServer]:
    """A gateway, the offline profile for Scribe, one example in the library."""
    settings.BEARPIT_HOME = tmp_path / "home"
    settings.BEARPIT_KEYSTORE_KEY = Fernet.generate_key().decode()
    settings.BEARPIT_API_TOKEN = TOKEN
    examples = tmp_path / "examples"
    shutil.copytree(REPO / "examples" / "toolcheck", examples / "toolcheck")
    settings.BEARPIT_EXAMPLES_DIR = examples
    settings.BEARPIT_SCRIBE_PROVIDER = "offline"
    keystore.reset_cache()
    seed_profiles()
    server = GatewayServer(port=0, upstream_timeout=5.0)
    server.start()
    settings.BEARPIT_SCRIBE_GATEWAY = server.url
    yield server
    server.stop()
    keystore.reset_cache()


@pytest.fixture
def script(settings: Any, tmp_path: Path):
    """``script([...steps])`` makes those the replies of the next session's model."""

    def use(steps: list[dict[str, Any]], *, loop: bool = False) -> None:
        path = tmp_path / "scribe-script.yaml"
        path.write_text(yaml.safe_dump({"steps": steps, "idle": "", "loop": loop}))
        settings.BEARPIT_SCRIBE_OFFLINE_SCRIPT = path

    return use


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def step(*calls: dict[str, Any], text: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {"text": text}
    if calls:
        out["tool_calls"] = list(calls)
    return out


def _agent(agent_id: str, **extra: Any) -> str:
    data = {
        "id": agent_id,
        "name": agent_id.title(),
        "description": f"{agent_id.title()} in the debate.",
        "model_category": "small",
        "budget": {"max_usd": 0.5, "on_exhausted": "starve"},
        **extra,
    }
    return json.dumps(data, indent=2)


def debate_files(*, contract: bool = True, bad_budget: bool = False) -> dict[str, str]:
    """A 3-agent package: two debaters and a judge who rules."""
    termination: list[dict[str, Any]] = [{"type": "referee_verdict"}]
    if contract:
        termination += [{"type": "duration", "limit": "60m"}, {"type": "stall", "limit": "20m"}]
    project = {
        "apiVersion": "bearpit/v1alpha1",
        "kind": "Project",
        "metadata": {"name": "debate", "description": "Two debaters argue; a judge rules."},
        "spec": {
            "goals": ["Win the judge's verdict with the better argument."],
            "guidelines": "1. Post your argument once.\n2. Answer the other side once.",
            "termination": termination,
        },
    }
    alice_budget = {"max_usd": 0.5, "on_exhausted": "explode" if bad_budget else "starve"}
    return {
        "project.json": json.dumps(project, indent=2),
        "agents/alice/agent.json": _agent("alice", budget=alice_budget),
        "agents/alice/persona.md": "# Alice\n\nYou argue for the motion.\n",
        "agents/bob/agent.json": _agent("bob"),
        "agents/bob/persona.md": "# Bob\n\nYou argue against the motion.\n",
        "agents/judge/agent.json": _agent(
            "judge",
            role="referee",
            model_category="large",
            rubric="Read both arguments, then call rule with the winner and your reasons.",
            powers={"verdict_ends_realm": True},
        ),
    }


def writes(files: dict[str, str]) -> list[dict[str, Any]]:
    return [call("write_draft_file", path=path, content=text) for path, text in files.items()]


class Api:
    def __init__(self, client: Any) -> None:
        self.client = client

    def get(self, path: str) -> Any:
        return self.client.get(path, HTTP_AUTHORIZATION=f"Bearer {TOKEN}")

    def post(self, path: str, data: Any = None) -> Any:
        return self.client.post(
            path,
            data=json.dumps({} if data is None else data),
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {TOKEN}",
        )

    def delete(self, path: str) -> Any:
        return self.client.delete(path, HTTP_AUTHORIZATION=f"Bearer {TOKEN}")

    def say(self, session_id: str, text: str) -> list[dict[str, str]]:
        """One message; Scribe's streamed reply, line by line."""
        response = self.post("/api/scribe/message", {"session_id": session_id, "text": text})
        assert response.status_code == 200, response.content
        assert response["Content-Type"] == "application/x-ndjson"
        body = b"".join(response.streaming_content).decode()
        return [json.loads(line) for line in body.splitlines()]


@pytest.fixture
def api(client: Any, scribe_env: GatewayServer) -> Api:
    return Api(client)


def kinds(lines: list[dict[str, str]]) -> list[str]:
    return [line["kind"] for line in lines]
