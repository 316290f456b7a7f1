"""``manage.py pit_schema``: JSON Schemas of the manifests that editors can use."""

from __future__ import annotations

import io
import json

import jsonschema
import pytest
from django.core.management import call_command

from tests.realms.packages.helpers import COMPAT, REPO, base_project


def run(*args):
    out, err = io.StringIO(), io.StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def schema_validators(tmp_path):
    out, _ = run("pit_schema", "-o", str(tmp_path / "schemas"))
    project_schema = json.loads((tmp_path / "schemas" / "project.schema.json").read_text())
    agent_schema = json.loads((tmp_path / "schemas" / "agent.schema.json").read_text())
    assert "wrote" in out
    jsonschema.Draft202012Validator.check_schema(project_schema)
    jsonschema.Draft202012Validator.check_schema(agent_schema)
    return (
        jsonschema.Draft202012Validator(project_schema),
        jsonschema.Draft202012Validator(agent_schema),
    )


def assert_manifests_conform(root, project_validator, agent_validator):
    projects = sorted(root.glob("*/project.json"))
    agents = sorted(root.glob("*/agents/*/agent.json"))
    assert projects and agents, root
    for manifest in projects:
        doc = json.loads(manifest.read_text())
        assert not list(project_validator.iter_errors(doc)), manifest
    for manifest in agents:
        assert not list(agent_validator.iter_errors(json.loads(manifest.read_text()))), manifest


@pytest.mark.compat
def test_the_corpus_manifests_conform_to_the_schemas(tmp_path):
    assert_manifests_conform(COMPAT, *schema_validators(tmp_path))


def test_schema_writes_usable_json_schemas(tmp_path):
    project_validator, agent_validator = schema_validators(tmp_path)
    # The project's own packages conform, and an unknown key or a bad enum does not.
    assert_manifests_conform(REPO / "examples", project_validator, agent_validator)
    assert_manifests_conform(
        REPO / "tests" / "e2e" / "packages", project_validator, agent_validator
    )
    assert list(project_validator.iter_errors({**base_project(), "surprise": 1}))
    assert list(agent_validator.iter_errors({"id": "x", "role": "boss"}))
    assert list(agent_validator.iter_errors({"id": "x", "resource_files": {}}))
