"""Whatever it is given, the loader answers with a LoadResult and never raises."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from realms.packages import LoadResult, PackageError, load_package

from .helpers import COMPAT, REPO, base_project, write_package

# The project's own packages, and the reference corpus's when BEARPIT_COMPAT_DIR names it.
PACKAGE_DIRS = sorted(
    p
    for root in (REPO / "examples", REPO / "tests" / "e2e" / "packages", COMPAT)
    if root.is_dir()
    for p in root.iterdir()
    if (p / "project.json").is_file()
)

SETTINGS = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**12), max_value=10**12)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=30),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=20,
)
KEYS = [
    "apiVersion",
    "kind",
    "metadata",
    "name",
    "spec",
    "goals",
    "turns",
    "termination",
    "mechanics",
    "machine",
    "roles",
    "states",
    "transitions",
    "wake",
    "tools",
    "parameters",
    "id",
    "role",
    "budget",
    "skills",
    "private_messaging",
    "model",
    "persona",
    "agents",
]


def check(result: Any) -> None:
    assert isinstance(result, LoadResult)
    assert result.ok == (not result.errors)
    assert (result.project is not None) == result.ok
    for error in result.errors:
        assert isinstance(error, PackageError)
        assert str(error)
        assert "the loader failed" not in str(error)  # never our own bug
    json.dumps(result.as_dict())
    if result.project is not None:
        json.dumps(result.project.snapshot())


@SETTINGS
@given(project=json_values, agent=json_values)
def test_random_documents(project, agent):
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "pkg"
        (root / "agents" / "a").mkdir(parents=True)
        (root / "project.json").write_text(json.dumps(project))
        (root / "agents" / "a" / "agent.json").write_text(json.dumps(agent))
        check(load_package(root))
        flat = Path(tmp) / "flat.json"
        flat.write_text(json.dumps({"metadata": {"name": "x"}, "agents": [agent]}))
        check(load_package(flat))


@SETTINGS
@given(data=st.binary(max_size=400), suffix=st.sampled_from([".json", ".yaml", ".yml"]))
def test_random_bytes(data, suffix):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"project{suffix}"
        path.write_bytes(data)
        check(load_package(path))
        check(load_package(Path(tmp)))


def _containers(node: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [path]
    if isinstance(node, dict):
        for key, value in node.items():
            if isinstance(value, dict | list):
                found.extend(_containers(value, (*path, key)))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            if isinstance(value, dict | list):
                found.extend(_containers(value, (*path, index)))
    return found


def _at(node: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        node = node[part]
    return node


@settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_mutated_corpus_packages(data, tmp_path_factory):
    source = data.draw(st.sampled_from(PACKAGE_DIRS))
    root = tmp_path_factory.mktemp("mut") / source.name
    shutil.copytree(source, root)
    files = sorted(root.rglob("*.json"))
    for _ in range(data.draw(st.integers(min_value=1, max_value=3))):
        target = data.draw(st.sampled_from(files))
        doc = json.loads(target.read_text())
        container = _at(doc, data.draw(st.sampled_from(_containers(doc))))
        action = data.draw(st.sampled_from(["drop", "retype", "inject"]))
        if isinstance(container, dict) and container:
            key = data.draw(st.sampled_from(sorted(container)))
            if action == "drop":
                del container[key]
            elif action == "retype":
                container[key] = data.draw(json_values)
            else:
                container[data.draw(st.sampled_from(KEYS))] = data.draw(json_values)
        elif isinstance(container, list) and container:
            index = data.draw(st.integers(min_value=0, max_value=len(container) - 1))
            if action == "drop":
                del container[index]
            else:
                container[index] = data.draw(json_values)
        target.write_text(json.dumps(doc))
    check(load_package(root))


def test_wrong_types_everywhere(tmp_path):
    doc = {
        "apiVersion": 3,
        "kind": ["Project"],
        "metadata": "name",
        "spec": {
            "goals": "win",
            "turns": "yes",
            "termination": {"type": "duration"},
            "mechanics": [None, 3, {"kind": "state-machine", "machine": []}],
            "tools": [],
            "parameters": {"a": "b"},
            "environment": None,
        },
    }
    agents = {"a": {"id": 1, "tools": "web_fetch", "skills": {}, "budget": 5, "model": "gpt"}}
    result = load_package(write_package(tmp_path / "pkg", doc, agents))
    check(result)
    assert len(result.errors) >= 12


def test_many_agents_and_big_prose(tmp_path):
    agents = {f"a{i:03d}": {"id": f"a{i:03d}", "persona": "p" * 40_000} for i in range(60)}
    result = load_package(write_package(tmp_path / "pkg", base_project(), agents))
    check(result)
    assert result.ok and len(result.project.agents) == 60  # type: ignore[union-attr]
