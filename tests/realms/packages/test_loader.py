"""The package layout: manifests, roster, personas, resources, skills and file safety."""

from __future__ import annotations

import json
import os

import yaml

from realms.packages import load_package

from .helpers import base_agents, base_project, load, messages, write_package


def test_minimal_folder_package_loads(tmp_path):
    result = load(tmp_path)
    assert result.ok, messages(result)
    project = result.project
    assert project is not None
    assert [a.id for a in project.agents] == ["ping", "pong", "umpire"]
    assert project.referee is not None and project.referee.id == "umpire"
    assert project.referee.powers is not None  # referees get default powers
    assert project.agent("ping").powers is None  # type: ignore[union-attr]
    assert result.manifest == "project.json"
    assert result.name == "tiny"


def test_roster_order_is_sorted_folder_names(tmp_path):
    agents = {name: {"id": name} for name in ("zed", "amy", "mo-2", "bob")}
    result = load(tmp_path, agents=agents)
    assert [a.id for a in result.project.agents] == ["amy", "bob", "mo-2", "zed"]  # type: ignore[union-attr]


def test_yaml_project_and_agent(tmp_path):
    root = tmp_path / "pkg"
    (root / "agents" / "solo").mkdir(parents=True)
    (root / "project.yaml").write_text(yaml.safe_dump(base_project()), "utf-8")
    (root / "agents" / "solo" / "agent.yaml").write_text("id: solo\nrole: participant\n")
    result = load_package(root)
    assert result.ok, messages(result)
    assert result.manifest == "project.yaml"


def test_flat_single_file_manifest_with_inline_agents(tmp_path):
    doc = base_project()
    doc["agents"] = [{"id": "b", "persona": "I am b."}, {"id": "a", "role": "referee"}]
    path = tmp_path / "flat.json"
    path.write_text(json.dumps(doc))
    result = load_package(path)
    assert result.ok, messages(result)
    assert [a.id for a in result.project.agents] == ["b", "a"]  # type: ignore[union-attr]
    assert result.project.agent("b").persona == "I am b."  # type: ignore[union-attr]


def test_inline_agent_errors_are_located_by_id(tmp_path):
    doc = base_project()
    doc["agents"] = [{"id": "b", "budget": {"on_exhausted": "stop"}}, {"role": "referee"}]
    path = tmp_path / "flat.json"
    path.write_text(json.dumps(doc))
    assert messages(load_package(path)) == [
        "flat.json: agents.b.budget.on_exhausted: expected one of starve, starve_then_kill, "
        'kill; got "stop"',
        "flat.json: agents[1].id: required field missing",
    ]


def test_inline_and_folder_roster_together_is_refused(tmp_path):
    doc = base_project()
    doc["agents"] = [{"id": "x"}]
    result = load(tmp_path, project=doc)
    assert messages(result) == [
        "project.json: agents: the roster is defined both here and as agents/ folders; use one"
    ]


def test_no_agents(tmp_path):
    result = load(tmp_path, agents={})
    assert messages(result) == [
        "agents/: the package has no agents (add agents/<id>/agent.json, or an agents list in "
        "the manifest)"
    ]


def test_agent_folder_without_manifest(tmp_path):
    result = load(tmp_path, files={"agents/ghost/persona.md": "boo"})
    assert messages(result) == ["agents/ghost: agent folder has no agent.json (or agent.yaml)"]


def test_agent_id_must_equal_folder_name(tmp_path):
    agents = base_agents()
    agents["pong"] = {"id": "pang"}
    assert messages(load(tmp_path, agents=agents)) == [
        'agents/pong/agent.json: id: expected the folder name "pong"; got "pang"'
    ]


def test_missing_path_and_missing_manifest(tmp_path):
    missing = load_package(tmp_path / "nope")
    assert not missing.ok and "no such file or folder" in messages(missing)[0]
    (tmp_path / "empty").mkdir()
    assert messages(load_package(tmp_path / "empty")) == [
        "project.json: no project.json, project.yaml or project.yml in the package folder"
    ]
    assert messages(load_package("bad\x00path")) == ["bad\x00path: no such file or folder"]
    odd = tmp_path / "notes.txt"
    odd.write_text("hello")
    assert messages(load_package(odd)) == [
        'notes.txt: expected a package folder or a .json, .yaml or .yml manifest; got "notes.txt"'
    ]


def test_junk_manifests(tmp_path):
    cases = {
        "bin.json": b"\x00\xff\xfe junk",
        "bad.json": b"{not json",
        "list.json": b"[1, 2]",
        "nan.json": b'{"metadata": {"name": NaN}}',
        "bad.yaml": b"a: [unclosed",
    }
    expected = {
        "bin.json": "bin.json: is not UTF-8 text",
        "bad.json": "bad.json: is not valid JSON: Expecting property name enclosed in double "
        "quotes (line 1)",
        "list.json": "list.json: expected an object at the top of the file; got a list",
        "nan.json": "nan.json: NaN is not a JSON number",
        "bad.yaml": "bad.yaml: is not valid YAML: expected ',' or ']', but got '<stream end>' "
        "(line 1)",
    }
    for name, body in cases.items():
        path = tmp_path / name
        path.write_bytes(body)
        assert messages(load_package(path)) == [expected[name]], name


def test_yaml_aliases_are_refused(tmp_path):
    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n"
        for i in range(8)
    )
    path = tmp_path / "bomb.yaml"
    path.write_text(bomb)
    assert messages(load_package(path)) == ["bomb.yaml: YAML aliases are not supported (line 2)"]


def test_deeply_nested_json(tmp_path):
    path = tmp_path / "deep.json"
    path.write_text('{"metadata": ' + "[" * 5000 + "]" * 5000 + "}")
    assert messages(load_package(path)) == [
        "deep.json: the document is nested deeper than 64 levels"
    ]


def test_oversized_manifest(tmp_path):
    path = tmp_path / "big.json"
    path.write_text('{"metadata": {"name": "' + "x" * 1_100_000 + '"}}')
    assert messages(load_package(path)) == ["big.json: is larger than 1 MB (1100026 bytes)"]


def test_persona_file_is_the_fallback(tmp_path):
    agents = base_agents()
    agents["pong"]["persona"] = "inline wins"
    result = load(
        tmp_path,
        agents=agents,
        files={"agents/ping/persona.md": "# Ping\n", "agents/pong/persona.md": "file"},
    )
    project = result.project
    assert project is not None
    assert project.agent("ping").persona == "# Ping\n"  # type: ignore[union-attr]
    assert project.agent("pong").persona == "inline wins"  # type: ignore[union-attr]
    assert project.agent("umpire").persona is None  # type: ignore[union-attr]


def test_resources_merge_and_agent_wins(tmp_path):
    result = load(
        tmp_path,
        files={
            "resources/rules.md": "project rules",
            "resources/deep/map.txt": "map",
            "agents/ping/resources/rules.md": "ping's own rules",
            "agents/ping/resources/brief.txt": "brief",
        },
    )
    project = result.project
    assert project is not None
    ping = project.agent("ping")
    assert ping is not None
    assert ping.resource_files == {
        "rules.md": "ping's own rules",
        "deep/map.txt": "map",
        "brief.txt": "brief",
    }
    assert ping.resources == ["brief.txt", "rules.md"]
    assert project.agent("pong").resource_files == {  # type: ignore[union-attr]
        "rules.md": "project rules",
        "deep/map.txt": "map",
    }
    assert project.project_resources == {"deep/map.txt": "map", "rules.md": "project rules"}


def test_unsafe_resource_files_are_skipped_with_a_warning(tmp_path):
    secret = tmp_path / "host-secret.txt"
    secret.write_text("TOP SECRET")
    root = write_package(
        tmp_path / "pkg",
        files={
            "agents/ping/resources/ok.txt": "fine",
            "agents/ping/resources/blob.bin": b"\x89PNG\x00\xff",
            "agents/ping/resources/huge.txt": "x" * 1_000_001,
        },
    )
    os.symlink(secret, root / "agents/ping/resources/leak.txt")
    os.symlink(tmp_path, root / "agents/ping/resources/dir-link")
    result = load_package(root)
    assert result.ok, messages(result)
    ping = result.project.agent("ping")  # type: ignore[union-attr]
    assert ping is not None and ping.resource_files == {"ok.txt": "fine"}
    assert [str(w) for w in result.warnings] == [
        "agents/ping/resources/blob.bin: skipped: is not UTF-8 text",
        "agents/ping/resources/dir-link: skipped: is a symbolic link, which packages may not "
        "contain",
        "agents/ping/resources/huge.txt: skipped: is larger than 1 MB (1000001 bytes)",
        "agents/ping/resources/leak.txt: skipped: is a symbolic link, which packages may not "
        "contain",
    ]
    assert "TOP SECRET" not in json.dumps(result.project.snapshot())  # type: ignore[union-attr]


def test_symlinked_manifest_and_agent_folder_are_refused(tmp_path):
    outside = tmp_path / "outside.json"
    outside.write_text(json.dumps({"id": "ping"}))
    root = write_package(tmp_path / "pkg", agents={"pong": {"id": "pong"}})
    (root / "agents" / "ping").mkdir()
    os.symlink(outside, root / "agents" / "ping" / "agent.json")
    os.symlink(root / "agents" / "pong", root / "agents" / "alias")
    assert messages(load_package(root)) == [
        "agents/alias: is a symbolic link, which packages may not contain",
        "agents/ping/agent.json: is a symbolic link, which packages may not contain",
    ]


def test_readme_and_offline_folder_are_ignored(tmp_path):
    result = load(
        tmp_path,
        files={"README.md": "# hi", "offline/ping.json": "{not even json", "notes/x.bin": b"\0"},
    )
    assert result.ok and not result.warnings


def test_retired_fields_are_dropped_with_warnings(tmp_path):
    doc = base_project(duration="2h")
    doc["spec"]["environment"] = {
        "roster_visibility": "full",
        "shared_folder": {"enabled": True, "quota": "10MB"},
    }
    result = load(tmp_path, project=doc)
    assert result.ok, messages(result)
    assert [str(w) for w in result.warnings] == [
        "project.json: spec.environment.roster_visibility: retired field ignored (was never "
        "enforced)",
        "project.json: spec.environment.shared_folder.quota: retired field ignored (was never "
        "enforced)",
        "project.json: spec.duration: retired field ignored (use a duration termination "
        "condition instead)",
    ]
    assert result.project.spec.environment.shared_folder.enabled  # type: ignore[union-attr]


def test_local_skills_from_agent_and_project(tmp_path):
    agents = base_agents()
    agents["ping"]["skills"] = [
        {"source": "local", "ref": "mine"},
        {"source": "local", "ref": "shared"},
        {"source": "builtin", "ref": "competitor"},
    ]
    result = load(
        tmp_path,
        agents=agents,
        files={
            "agents/ping/skills/mine/SKILL.md": "my skill",
            "skills/shared/SKILL.md": "shared skill",
        },
    )
    assert result.ok, messages(result)
    project = result.project
    assert project.agent("ping").local_skills == {  # type: ignore[union-attr]
        "mine": "my skill",
        "shared": "shared skill",
    }
    assert project.project_skills == {"shared": "shared skill"}  # type: ignore[union-attr]


def test_missing_and_escaping_local_skills(tmp_path):
    agents = base_agents()
    agents["ping"]["skills"] = [
        {"source": "local", "ref": "absent"},
        {"source": "local", "ref": "../../etc"},
    ]
    assert messages(load(tmp_path, agents=agents)) == [
        "agents/ping/agent.json: skills[0].ref: expected a skills/absent/SKILL.md in the agent "
        'folder or the package; got "absent"',
        "agents/ping/agent.json: skills[1].ref: expected a skill folder name inside skills/; "
        'got "../../etc"',
    ]


def test_loader_only_fields_cannot_be_authored(tmp_path):
    agents = base_agents()
    agents["ping"]["resource_files"] = {"x": "y"}
    assert messages(load(tmp_path, agents=agents)) == [
        "agents/ping/agent.json: resource_files: unknown field"
    ]


def test_credentials_example(tmp_path):
    good = load(
        tmp_path / "a",
        files={
            "credentials.example.json": json.dumps(
                {"_comment": "handles", "required": ["azure-main"]}
            )
        },
    )
    assert good.ok and good.credentials_required == ["azure-main"]
    bad = load(
        tmp_path / "b",
        files={
            "credentials.example.json": json.dumps({"required": ["sk-live-abcdef", 3], "keys": {}})
        },
    )
    assert messages(bad) == [
        "credentials.example.json: required[0]: looks like a real key; list key-store "
        "handles, never keys",
        "credentials.example.json: required[1]: expected a key-store handle; got 3",
        "credentials.example.json: keys: unknown field",
    ]
    assert "sk-live" not in " ".join(messages(bad)).replace("required[0]", "")


def test_every_error_of_a_package_at_once(tmp_path):
    doc = base_project()
    doc["spec"]["turns"] = {"advance": "quiet-gap"}
    doc["metadata"]["tags"] = ["x" * 41]
    agents = base_agents()
    agents["ping"]["budget"] = {"on_exhausted": "stop"}
    agents["pong"]["color"] = "blue"
    result = load(tmp_path, project=doc, agents=agents)
    assert messages(result) == [
        "project.json: metadata.tags[0]: expected at most 40 characters; got 41 characters",
        "agents/ping/agent.json: budget.on_exhausted: expected one of starve, starve_then_kill, "
        'kill; got "stop"',
        'agents/pong/agent.json: color: expected a colour as #RRGGBB; got "blue"',
        "project.json: spec.turns.advance: expected one-message (quiet-gap is not "
        'implemented); got "quiet-gap"',
    ]
    assert result.project is None


def test_snapshot_is_json_and_round_trips(tmp_path):
    from realms.packages import Project

    result = load(tmp_path, files={"resources/a.md": "A"})
    project = result.project
    assert project is not None
    text = json.dumps(project.snapshot())
    assert Project.model_validate(json.loads(text)) == project


def test_empty_inline_list_beside_folders_is_fine(tmp_path):
    doc = base_project()
    doc["agents"] = []
    result = load(tmp_path, project=doc)
    assert result.ok, messages(result)
    assert len(result.project.agents) == 3  # type: ignore[union-attr]
