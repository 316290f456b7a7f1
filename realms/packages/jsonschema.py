"""JSON Schemas of ``project.json`` and ``agent.json``, exported from the pydantic models.

Editors and CI use them to check a package as it is written; the loader stays the authority
(cross-field rules such as "at most one referee" cannot be said in a JSON Schema).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from realms.packages.schema.agent import AgentManifest
from realms.packages.schema.project import ProjectManifest

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


def _finish(schema: dict[str, Any], title: str, identifier: str) -> dict[str, Any]:
    return {"$schema": SCHEMA_DIALECT, "$id": identifier, **schema, "title": title}


def project_json_schema() -> dict[str, Any]:
    """The schema of a project manifest (``project.json``)."""
    schema = ProjectManifest.model_json_schema(by_alias=True, mode="validation")
    return _finish(schema, "Bearpit project manifest", "project.schema.json")


def agent_json_schema() -> dict[str, Any]:
    """The schema of an agent manifest (``agents/<id>/agent.json``)."""
    schema = AgentManifest.model_json_schema(by_alias=True, mode="validation")
    return _finish(schema, "Bearpit agent manifest", "agent.schema.json")


def write_json_schemas(out_dir: Path) -> list[Path]:
    """Write ``project.schema.json`` and ``agent.schema.json`` into ``out_dir``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for name, schema in (
        ("project.schema.json", project_json_schema()),
        ("agent.schema.json", agent_json_schema()),
    ):
        target = out_dir / name
        target.write_text(json.dumps(schema, indent=2, ensure_ascii=False) + "\n", "utf-8")
        written.append(target)
    return written
