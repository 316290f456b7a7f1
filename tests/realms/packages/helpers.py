"""Build small packages in a temporary folder from dicts."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from realms.packages import LoadResult, load_package
from tests.fixtures.compat import COMPAT

REPO = Path(__file__).resolve().parents[3]
__all__ = ["COMPAT", "REPO"]


def base_project(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "bearpit/v1alpha1",
        "kind": "Project",
        "metadata": {"name": "tiny"},
        "spec": {"termination": [{"type": "duration", "limit": "10m"}], **spec},
    }


def base_agents() -> dict[str, dict[str, Any]]:
    return {
        "ping": {"id": "ping"},
        "pong": {"id": "pong"},
        "umpire": {"id": "umpire", "role": "referee"},
    }


def write_package(
    root: Path,
    project: dict[str, Any] | None = None,
    agents: dict[str, dict[str, Any]] | None = None,
    files: dict[str, str | bytes] | None = None,
) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "project.json").write_text(json.dumps(project or base_project()), "utf-8")
    for agent_id, doc in (base_agents() if agents is None else agents).items():
        folder = root / "agents" / agent_id
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "agent.json").write_text(json.dumps(doc), "utf-8")
    for rel, body in (files or {}).items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(body, bytes):
            target.write_bytes(body)
        else:
            target.write_text(body, "utf-8")
    return root


def load(
    tmp_path: Path,
    project: dict[str, Any] | None = None,
    agents: dict[str, dict[str, Any]] | None = None,
    files: dict[str, str | bytes] | None = None,
) -> LoadResult:
    return load_package(write_package(tmp_path / "pkg", project, agents, files))


def messages(result: LoadResult) -> list[str]:
    return [str(error) for error in result.errors]


def with_agent(agent_id: str, **fields: Any) -> dict[str, dict[str, Any]]:
    agents = copy.deepcopy(base_agents())
    agents.setdefault(agent_id, {"id": agent_id}).update(fields)
    return agents
