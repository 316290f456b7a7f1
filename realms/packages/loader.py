"""``load_package``: a folder or a single manifest file in, a ``LoadResult`` out.

The loader never raises. Whatever it is given (a missing path, binary junk, a YAML bomb,
wrong types everywhere), it answers with every problem it can find, each located by file and
field, so an author fixes a package in one pass.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from pydantic import ValidationError

from realms.packages.errors import (
    PackageError,
    PackageWarning,
    expected,
    join_path,
    problem,
)
from realms.packages.files import (
    MANIFEST_SUFFIXES,
    FileProblem,
    find_manifest,
    is_real_dir,
    read_document,
    read_text,
    read_text_files,
)
from realms.packages.parameters import ParameterInfo, scan_parameters
from realms.packages.rules import Source, check_project
from realms.packages.schema.agent import AgentManifest, looks_like_secret
from realms.packages.schema.project import Project, ProjectManifest
from realms.packages.tools import canonical_tool_name
from realms.packages.translate import translate
from realms.skills.skillfile import SkillFileError, check_ref
from realms.skills.user import user_root

log = logging.getLogger(__name__)

# Fields the format once had and dropped; old manifests keep loading, with a warning.
RETIRED_FIELDS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("spec", "environment", "roster_visibility"), "was never enforced"),
    (("spec", "environment", "shared_folder", "quota"), "was never enforced"),
    (("spec", "duration"), "use a duration termination condition instead"),
)
_LOADER_ONLY = ("resource_files", "local_skills")
_PERSONA_LIMIT = 50_000


@dataclass
class LoadResult:
    """Everything known about a package after loading it."""

    root: Path
    errors: list[PackageError] = field(default_factory=list)
    warnings: list[PackageWarning] = field(default_factory=list)
    tool_problems: list[PackageError] = field(default_factory=list)
    project: Project | None = None
    parameters: list[ParameterInfo] = field(default_factory=list)
    manifest: str = ""
    name: str = ""
    credentials_required: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors

    def as_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "name": self.name,
            "manifest": self.manifest,
            "errors": [error.as_dict() for error in self.errors],
            "warnings": [warning.as_dict() for warning in self.warnings],
            "tool_problems": [item.as_dict() for item in self.tool_problems],
            "parameters": [param.as_dict() for param in self.parameters],
            "credentials_required": list(self.credentials_required),
        }


def load_package(path: Path | str) -> LoadResult:
    """Load and validate a package folder or a single-file manifest. Never raises."""
    try:
        given = Path(path)
    except TypeError:
        return LoadResult(root=Path(), errors=[expected("", "", "a path", path)])
    try:
        return _Loader(given).load()
    except Exception:
        # A bug of ours must not reach the author as a traceback; the log keeps it for us.
        log.exception("package loader failed on %s", given)
        return LoadResult(
            root=given,
            errors=[
                problem(
                    given.name,
                    "",
                    "the loader failed on this package (an internal "
                    "error, logged for the operators)",
                )
            ],
        )


class _Loader:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.result = LoadResult(root=path)
        self.sources: dict[str, Source] = {}
        self.agents: list[dict[str, Any]] = []  # validated agents as data, in roster order
        self.roster: list[str] = []  # every id the roster names, valid agent or not
        self.folder_mode = False

    # -- reporting ---------------------------------------------------------------------------
    def error(self, item: PackageError) -> None:
        self.result.errors.append(item)

    def warn(self, file: str, field_path: str, message: str) -> None:
        self.result.warnings.append(PackageWarning(file, field_path, message))

    def rel(self, path: Path) -> str:
        try:
            return path.relative_to(self.result.root).as_posix()
        except ValueError:
            return path.name

    # -- entry -------------------------------------------------------------------------------
    def load(self) -> LoadResult:
        path = self.path
        try:
            if not path.exists():
                self.error(problem(str(path), "", "no such file or folder"))
                return self.result
            resolved = path.resolve()
            is_dir = resolved.is_dir()
        except (OSError, RuntimeError, ValueError):
            self.error(problem(str(path), "", "cannot be read"))
            return self.result
        if is_dir:
            self.folder_mode = True
            self.result.root = resolved
            manifest_path = find_manifest(resolved, "project")
            if manifest_path is None:
                self.error(
                    problem(
                        "project.json",
                        "",
                        "no project.json, project.yaml or project.yml in the package folder",
                    )
                )
                return self.result
        else:
            self.result.root = resolved.parent
            manifest_path = resolved
            if resolved.suffix.lower() not in MANIFEST_SUFFIXES:
                self.error(
                    expected(
                        resolved.name,
                        "",
                        "a package folder or a .json, .yaml or .yml manifest",
                        resolved.name,
                    )
                )
                return self.result
        self.result.manifest = self.rel(manifest_path)
        doc = self.document(manifest_path)
        if doc is None:
            return self.result
        self.load_manifest(doc)
        return self.result

    def document(self, path: Path) -> dict[str, Any] | None:
        rel = self.rel(path)
        try:
            doc = read_document(path, self.result.root)
        except FileProblem as exc:
            self.error(problem(rel, "", str(exc)))
            return None
        if not isinstance(doc, dict):
            self.error(expected(rel, "", "an object at the top of the file", doc))
            return None
        return doc

    # -- the manifest ------------------------------------------------------------------------
    def drop_retired(self, doc: dict[str, Any]) -> None:
        for keys, why in RETIRED_FIELDS:
            node: Any = doc
            for key in keys[:-1]:
                node = node.get(key) if isinstance(node, dict) else None
            if isinstance(node, dict) and keys[-1] in node:
                del node[keys[-1]]
                self.warn(self.result.manifest, ".".join(keys), f"retired field ignored ({why})")

    def load_manifest(self, doc: dict[str, Any]) -> None:
        manifest = self.result.manifest
        self.drop_retired(doc)
        metadata = doc.get("metadata")
        if isinstance(metadata, dict) and isinstance(metadata.get("name"), str):
            self.result.name = metadata["name"][:120]
        has_inline = "agents" in doc
        inline = doc.pop("agents", None)
        # An empty inline list beside agent folders says nothing; only a real one conflicts.
        conflict = bool(inline) or (has_inline and not isinstance(inline, list))
        parsed: ProjectManifest | None = None
        try:
            parsed = ProjectManifest.model_validate(doc)
        except ValidationError as exc:
            self.result.errors.extend(translate(exc, manifest))
            parsed = self.spec_only(doc)
        if parsed is not None:
            self.canonical_spec_tools(parsed)

        folders = self.agent_folders() if self.folder_mode else []
        if conflict and folders:
            self.error(
                problem(
                    manifest,
                    "agents",
                    "the roster is defined both here and as agents/ folders; use one",
                )
            )
        elif folders:
            for folder in folders:
                self.load_agent_folder(folder)
        elif has_inline:
            self.load_inline_agents(inline)
        if not self.roster and not (conflict and folders):
            where = "agents/" if self.folder_mode else manifest
            self.error(
                problem(
                    where,
                    "",
                    "the package has no agents (add agents/<id>/"
                    "agent.json, or an agents list in the manifest)",
                )
            )

        shared: dict[str, str] = {}
        project_skills: dict[str, str] = {}
        if self.folder_mode:
            shared = self.texts(self.result.root / "resources")
            project_skills = self.project_skills()
            self.load_credentials()
        if parsed is None:
            return
        self.finish(parsed, shared, project_skills)

    @staticmethod
    def spec_only(doc: dict[str, Any]) -> ProjectManifest | None:
        """The manifest with a stand-in name when only ``metadata`` or the top-level keys
        failed, so the rules of ``spec`` can still be checked and reported."""
        try:
            return ProjectManifest.model_validate(
                {"metadata": {"name": "-"}, "spec": doc.get("spec", {})}
            )
        except ValidationError:
            return None

    def canonical_spec_tools(self, parsed: ProjectManifest) -> None:
        renamed: dict[str, dict[str, Any]] = {}
        for name, config in parsed.spec.tools.items():
            canonical = canonical_tool_name(name)
            if canonical != name:
                self.warn(
                    self.result.manifest, f"spec.tools.{name}", f"old tool name read as {canonical}"
                )
            if canonical in renamed:
                self.error(
                    problem(
                        self.result.manifest,
                        f"spec.tools.{name}",
                        f"configures {canonical} a second time",
                    )
                )
            renamed[canonical] = config
        parsed.spec.tools = renamed

    # -- agents ------------------------------------------------------------------------------
    def agent_folders(self) -> list[Path]:
        agents_dir = self.result.root / "agents"
        if agents_dir.is_symlink():
            self.error(problem("agents", "", "is a symbolic link, which packages may not contain"))
            return []
        if not agents_dir.is_dir():
            return []
        folders: list[Path] = []
        for entry in sorted(agents_dir.iterdir(), key=lambda p: p.name):
            if entry.is_symlink():
                self.error(
                    problem(
                        self.rel(entry), "", "is a symbolic link, which packages may not contain"
                    )
                )
            elif entry.is_dir():
                folders.append(entry)
        return folders

    def load_agent_folder(self, folder: Path) -> None:
        folder_rel = self.rel(folder)
        self.roster.append(folder.name)
        manifest_path = find_manifest(folder, "agent")
        if manifest_path is None:
            self.error(problem(folder_rel, "", "agent folder has no agent.json (or agent.yaml)"))
            return
        file = self.rel(manifest_path)
        doc = self.document(manifest_path)
        if doc is None:
            return
        source = Source(file)
        agent = self.validate_agent(doc, source)
        if agent is None:
            return
        if agent.id != folder.name:
            self.error(expected(file, "id", f'the folder name "{folder.name}"', agent.id))
            return
        data = agent.model_dump(by_alias=True)
        if agent.persona is None:
            data["persona"] = self.persona(folder)
        own = self.texts(folder / "resources")
        data["resources"] = sorted(own)
        data["resource_files"] = own
        data["local_skills"] = self.local_skills(agent, source, folder)
        self.add_agent(agent.id, data, source)

    def load_inline_agents(self, inline: Any) -> None:
        manifest = self.result.manifest
        if not isinstance(inline, list):
            self.error(expected(manifest, "agents", "a list of agents", inline))
            return
        for index, doc in enumerate(inline):
            raw_id = doc.get("id") if isinstance(doc, dict) else None
            valid_id = isinstance(raw_id, str) and raw_id and "." not in raw_id
            prefix = f"agents.{raw_id}" if valid_id else f"agents[{index}]"
            if isinstance(raw_id, str) and raw_id:
                if raw_id in self.roster:
                    self.error(
                        problem(manifest, f"{prefix}.id", f"agent id {raw_id} is used twice")
                    )
                    continue
                self.roster.append(raw_id)
            if not isinstance(doc, dict):
                self.error(expected(manifest, prefix, "an agent object", doc))
                continue
            source = Source(manifest, prefix)
            agent = self.validate_agent(doc, source)
            if agent is None:
                continue
            data = agent.model_dump(by_alias=True)
            data["resources"] = []
            data["resource_files"] = {}
            data["local_skills"] = self.local_skills(agent, source, None)
            self.add_agent(agent.id, data, source)

    def validate_agent(self, doc: dict[str, Any], source: Source) -> AgentManifest | None:
        for key in _LOADER_ONLY:
            if key in doc:
                self.error(problem(source.file, source.at(key), "unknown field"))
                return None
        try:
            agent = AgentManifest.model_validate(doc)
        except ValidationError as exc:
            self.result.errors.extend(translate(exc, source.file, source.prefix))
            return None
        tools: list[str] = []
        for index, name in enumerate(agent.tools):
            canonical = canonical_tool_name(name)
            if canonical != name:
                self.warn(
                    source.file,
                    source.at("tools", index),
                    f"old tool name {name} read as {canonical}",
                )
            tools.append(canonical)
        agent.tools = tools
        return agent

    def add_agent(self, agent_id: str, data: dict[str, Any], source: Source) -> None:
        if data.get("role") == "referee" and data.get("powers") is None:
            data["powers"] = {}
        self.sources[agent_id] = source
        self.agents.append(data)

    def persona(self, folder: Path) -> str | None:
        path = folder / "persona.md"
        if not (path.exists() or path.is_symlink()):
            return None
        file = self.rel(path)
        try:
            body = read_text(path, self.result.root)
        except FileProblem as exc:
            self.error(problem(file, "", str(exc)))
            return None
        if len(body) > _PERSONA_LIMIT:
            self.error(
                PackageError(
                    file=file,
                    expected=f"at most {_PERSONA_LIMIT} characters",
                    found=f"{len(body)} characters",
                )
            )
            return None
        return body

    def texts(self, folder: Path) -> dict[str, str]:
        found = read_text_files(folder, self.result.root)
        for rel, why in found.skipped.items():
            where = self.rel(folder / rel) if rel else self.rel(folder)
            self.warn(where, "", f"skipped: {why}")
        return found.files

    def local_skills(
        self, agent: AgentManifest, source: Source, folder: Path | None
    ) -> dict[str, str]:
        out: dict[str, str] = {}
        for index, skill in enumerate(agent.skills):
            if skill.source not in ("local", "user"):
                continue
            where = source.at("skills", index, "ref")
            if skill.ref in out:
                self.error(problem(source.file, where, f"skill {skill.ref!r} is named twice"))
                continue
            if skill.source == "user":
                text = self.user_skill(skill.ref, source.file, where)
                if text:
                    out[skill.ref] = text
                continue
            ref = PurePosixPath(skill.ref)
            if ref.is_absolute() or ".." in ref.parts or "\\" in skill.ref:
                self.error(
                    expected(source.file, where, "a skill folder name inside skills/", skill.ref)
                )
                continue
            candidates = []
            if folder is not None:
                candidates.append(folder / "skills" / skill.ref / "SKILL.md")
            if self.folder_mode:
                candidates.append(self.result.root / "skills" / skill.ref / "SKILL.md")
            text = None
            for candidate in candidates:
                if not (candidate.exists() or candidate.is_symlink()):
                    continue
                try:
                    text = read_text(candidate, self.result.root)
                except FileProblem as exc:
                    self.error(problem(self.rel(candidate), "", str(exc)))
                    text = ""
                break
            if text is None:
                self.error(
                    expected(
                        source.file,
                        where,
                        f"a skills/{skill.ref}/SKILL.md in the agent folder or the package",
                        skill.ref,
                    )
                )
            elif text:
                out[skill.ref] = text
        return out

    def user_skill(self, ref: str, file: str, where: str) -> str | None:
        """A skill of the operator's library, copied in so the realm keeps what it was given."""
        try:
            check_ref(ref)
        except SkillFileError as exc:
            self.error(problem(file, where, str(exc)))
            return None
        root = user_root()
        path = root / ref / "SKILL.md"
        if not (path.exists() or path.is_symlink()):
            self.error(expected(file, where, "a skill in the skills library", ref))
            return None
        try:
            return read_text(path, root)
        except FileProblem as exc:
            self.error(problem(file, where, f"skills library {ref}/SKILL.md {exc}"))
            return None

    # -- package-level files -----------------------------------------------------------------
    def project_skills(self) -> dict[str, str]:
        skills_dir = self.result.root / "skills"
        if skills_dir.is_symlink():
            self.warn("skills", "", "skipped: is a symbolic link, which packages may not contain")
            return {}
        out: dict[str, str] = {}
        if not skills_dir.is_dir():
            return out
        for entry in sorted(skills_dir.iterdir(), key=lambda p: p.name):
            if not is_real_dir(entry):
                continue
            path = entry / "SKILL.md"
            if not (path.exists() or path.is_symlink()):
                self.warn(self.rel(entry), "", "skipped: a skill folder needs a SKILL.md")
                continue
            try:
                out[entry.name] = read_text(path, self.result.root)
            except FileProblem as exc:
                self.error(problem(self.rel(path), "", str(exc)))
        return out

    def load_credentials(self) -> None:
        path = self.result.root / "credentials.example.json"
        if not (path.exists() or path.is_symlink()):
            return
        doc = self.document(path)
        if doc is None:
            return
        file = self.rel(path)
        for key, value in doc.items():
            if key == "_comment":
                if not isinstance(value, str):
                    self.error(expected(file, key, "a string", value))
            elif key == "required":
                if not isinstance(value, list):
                    self.error(expected(file, key, "a list of key-store handles", value))
                    continue
                for index, handle in enumerate(value):
                    where = join_path(key, index)
                    if not isinstance(handle, str) or not handle or len(handle) > 120:
                        self.error(expected(file, where, "a key-store handle", handle))
                    elif looks_like_secret(handle):
                        self.error(
                            problem(
                                file,
                                where,
                                "looks like a real key; list key-store handles, never keys",
                            )
                        )
                    else:
                        self.result.credentials_required.append(handle)
            else:
                self.error(problem(file, str(key), "unknown field"))

    # -- the whole project -------------------------------------------------------------------
    def finish(
        self, parsed: ProjectManifest, shared: dict[str, str], project_skills: dict[str, str]
    ) -> None:
        manifest = self.result.manifest
        complete = not self.result.errors
        data = parsed.model_dump(by_alias=True)
        for agent in self.agents:
            # An agent's own resource wins a name clash with a project resource.
            agent["resource_files"] = {**shared, **agent["resource_files"]}
        data["agents"] = self.agents
        data["project_resources"] = shared
        data["project_skills"] = project_skills
        try:
            project = Project.model_validate(data)
        except ValidationError as exc:
            self.result.errors.extend(translate(exc, manifest))
            return
        found = check_project(
            project, manifest=manifest, sources=self.sources, roster=self.roster, complete=complete
        )
        self.result.errors.extend(found.errors)
        self.result.warnings.extend(found.warnings)
        self.result.tool_problems.extend(found.tool_problems)
        if not complete:
            # Prose of agents that failed validation is missing, so a scan would mislead.
            return
        params, param_errors = scan_parameters(project, manifest)
        self.result.errors.extend(param_errors)
        self.result.parameters = params
        if not self.result.errors:
            self.result.project = project
