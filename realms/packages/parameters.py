"""Scenario parameters: ``${name}``, ``${name,default}``, ``${name,default,description}``.

The prose of a scenario is the source of truth for which parameters exist; ``spec.parameters``
only layers metadata (a default, a description, a type, choices, bounds) over what the scan
finds, and wins where both say something. Parameters fill prose only: never ids, models,
budgets, mechanic configuration or termination patterns (a ``${x}`` in a regex is regex).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from pydantic import ValidationError

from realms.packages.errors import PackageError, describe_value
from realms.packages.schema.project import Project
from realms.packages.translate import translate

# ``$${`` (a literal ``${``) is matched first so it never starts a placeholder. Inside a
# placeholder a backslash escapes the next character, so ``\,`` ``\}`` ``\\`` are literal.
_TOKEN = re.compile(r"\$\$\{|\$\{((?:\\.|[^\\}])*)\}", re.DOTALL)
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ESCAPE = re.compile(r"\\(.)", re.DOTALL)
BOOL_WORDS = ("true", "false", "yes", "no", "1", "0")

Origin = Literal["inline", "manifest"]


@dataclass(frozen=True)
class Placeholder:
    """One ``${…}`` as written. An empty middle part means no default."""

    name: str
    default: str | None
    description: str | None


def _split(body: str) -> list[str]:
    """Split on unescaped commas into at most three parts; the last keeps its commas."""
    parts: list[str] = []
    current: list[str] = []
    index = 0
    while index < len(body):
        char = body[index]
        if char == "\\" and index + 1 < len(body):
            current.append(body[index : index + 2])
            index += 2
            continue
        if char == "," and len(parts) < 2:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
        index += 1
    parts.append("".join(current))
    return parts


def _unescape(text: str) -> str:
    return _ESCAPE.sub(r"\1", text)


def _placeholder(body: str) -> Placeholder | None:
    parts = _split(body)
    name = parts[0].strip()
    if not _NAME.fullmatch(name):
        return None
    default = _unescape(parts[1]) if len(parts) > 1 and parts[1] != "" else None
    description = _unescape(parts[2]).strip() if len(parts) > 2 else ""
    return Placeholder(name=name, default=default, description=description or None)


def parse_placeholders(text: str) -> list[Placeholder]:
    """Every valid placeholder in ``text``, in order; invalid names stay literal text."""
    found: list[Placeholder] = []
    for match in _TOKEN.finditer(text):
        body = match.group(1)
        if body is None:
            continue
        placeholder = _placeholder(body)
        if placeholder is not None:
            found.append(placeholder)
    return found


def substitute(text: str, values: Mapping[str, str]) -> str:
    """Replace each valid placeholder by its value (missing → empty); ``$${`` becomes ``${``."""

    def replace(match: re.Match[str]) -> str:
        body = match.group(1)
        if body is None:
            return "${"
        placeholder = _placeholder(body)
        if placeholder is None:
            return match.group(0)
        return values.get(placeholder.name, "")

    return _TOKEN.sub(replace, text)


@dataclass(frozen=True)
class ParameterInfo:
    """A parameter of a scenario, with where each of its facts came from."""

    name: str
    default: str | None = None
    description: str | None = None
    type: str = "string"
    choices: list[str] | None = None
    multiline: bool = False
    minimum: float | None = None
    maximum: float | None = None
    default_origin: Origin | None = None
    description_origin: Origin | None = None
    inline_default: str | None = None
    occurrences: list[str] = field(default_factory=list)

    @property
    def required(self) -> bool:
        """No effective default: a launch must supply a value or consent to an empty one."""
        return self.default is None

    @property
    def overridden(self) -> bool:
        """The manifest replaced a default that the prose itself states."""
        return (
            self.default_origin == "manifest"
            and self.inline_default is not None
            and self.inline_default != self.default
        )

    @property
    def origin(self) -> str | None:
        """``inline``, ``manifest`` or ``overridden`` for the effective default."""
        return "overridden" if self.overridden else self.default_origin

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "default": self.default,
            "description": self.description,
            "type": self.type,
            "choices": self.choices,
            "multiline": self.multiline,
            "min": self.minimum,
            "max": self.maximum,
            "origin": self.origin,
            "description_origin": self.description_origin,
            "inline_default": self.inline_default,
            "required": self.required,
            "used_in": list(self.occurrences),
        }


def prose_fields(project: Project) -> Iterator[tuple[str, str]]:
    """(dotted path, text) of every field a parameter may fill, in scan order."""
    meta, spec = project.metadata, project.spec
    if meta.description:
        yield "metadata.description", meta.description
    for index, goal in enumerate(spec.goals):
        yield f"spec.goals[{index}]", goal
    if spec.guidelines:
        yield "spec.guidelines", spec.guidelines
    if spec.restrictions:
        yield "spec.restrictions", spec.restrictions
    shared = project.project_resources
    for path, body in shared.items():
        yield f"resources[{path}]", body
    for name, body in project.project_skills.items():
        yield f"skills[{name}]", body
    for agent in project.agents:
        prefix = f"agents.{agent.id}"
        if agent.description:
            yield f"{prefix}.description", agent.description
        for index, goal in enumerate(agent.goals):
            yield f"{prefix}.goals[{index}]", goal
        for index, item in enumerate(agent.responsibilities):
            yield f"{prefix}.responsibilities[{index}]", item
        if agent.persona:
            yield f"{prefix}.persona", agent.persona
        if agent.rubric:
            yield f"{prefix}.rubric", agent.rubric
        for path, body in agent.resource_files.items():
            if shared.get(path) != body:
                yield f"{prefix}.resource_files[{path}]", body
        for name, body in agent.local_skills.items():
            yield f"{prefix}.local_skills[{name}]", body


def _as_number(text: str) -> float | None:
    try:
        number = float(text)
    except ValueError:
        return None
    return number if number == number and abs(number) != float("inf") else None


def value_problem(param: ParameterInfo, value: str) -> str | None:
    """Why ``value`` is not acceptable for ``param`` (None when it is)."""
    if param.choices is not None and value not in param.choices:
        return f"expected one of {', '.join(param.choices)}; got {describe_value(value)}"
    if param.type in ("int", "number"):
        number = _as_number(value)
        if number is None:
            kind = "a whole number" if param.type == "int" else "a number"
            return f"expected {kind}; got {describe_value(value)}"
        if param.type == "int" and not number.is_integer():
            return f"expected a whole number; got {describe_value(value)}"
        if param.minimum is not None and number < param.minimum:
            return f"expected at least {param.minimum:g}; got {describe_value(value)}"
        if param.maximum is not None and number > param.maximum:
            return f"expected at most {param.maximum:g}; got {describe_value(value)}"
    if param.type == "bool" and value.lower() not in BOOL_WORDS:
        return f"expected one of {', '.join(BOOL_WORDS)}; got {describe_value(value)}"
    return None


def scan_parameters(
    project: Project, file: str = "project.json"
) -> tuple[list[ParameterInfo], list[PackageError]]:
    """The parameters of a project (ordered by first appearance) and its load-time errors.

    Errors: a ``spec.parameters`` entry no prose uses; one name with two different inline
    defaults; an effective default outside ``choices`` or not of the declared type.
    """
    errors: list[PackageError] = []
    inline_default: dict[str, str] = {}
    inline_description: dict[str, str] = {}
    occurrences: dict[str, list[str]] = {}
    for path, body in prose_fields(project):
        for placeholder in parse_placeholders(body):
            paths = occurrences.setdefault(placeholder.name, [])
            if path not in paths:
                paths.append(path)
            if placeholder.default is not None:
                prior = inline_default.setdefault(placeholder.name, placeholder.default)
                if prior != placeholder.default:
                    errors.append(
                        PackageError(
                            file=file,
                            field=path,
                            message=f"parameter {placeholder.name} has two different inline "
                            f"defaults: {describe_value(prior)} and "
                            f"{describe_value(placeholder.default)}; give it one, or set it "
                            f"in spec.parameters",
                        )
                    )
            if placeholder.description is not None:
                inline_description.setdefault(placeholder.name, placeholder.description)

    declared = project.spec.parameters
    for name in declared:
        if name not in occurrences:
            errors.append(
                PackageError(
                    file=file,
                    field=f"spec.parameters.{name}",
                    message=f"no scenario text uses ${{{name}}}; use it in the prose or "
                    f"remove the declaration",
                )
            )

    params: list[ParameterInfo] = []
    for name, paths in occurrences.items():
        spec = declared.get(name)
        manifest_default = spec.default if spec is not None else None
        manifest_description = spec.description if spec is not None else None
        default = manifest_default if manifest_default is not None else inline_default.get(name)
        default_origin: Origin | None = (
            "manifest"
            if manifest_default is not None
            else ("inline" if name in inline_default else None)
        )
        description = manifest_description or inline_description.get(name)
        description_origin: Origin | None = (
            "manifest"
            if manifest_description
            else ("inline" if name in inline_description else None)
        )
        param = ParameterInfo(
            name=name,
            default=default,
            description=description,
            type=spec.type if spec is not None else "string",
            choices=list(spec.choices) if spec is not None and spec.choices is not None else None,
            multiline=spec.multiline if spec is not None else False,
            minimum=spec.min if spec is not None else None,
            maximum=spec.max if spec is not None else None,
            default_origin=default_origin,
            description_origin=description_origin,
            inline_default=inline_default.get(name),
            occurrences=paths,
        )
        if default is not None:
            trouble = value_problem(param, default)
            if trouble is not None:
                where = "default" if default_origin == "manifest" else ""
                errors.append(
                    PackageError(
                        file=file,
                        field=f"spec.parameters.{name}.{where}".rstrip(".")
                        if spec is not None
                        else paths[0],
                        message=f"the default of parameter {name}: {trouble}",
                    )
                )
        params.append(param)
    return params, errors


def validate_parameter_values(
    params: list[ParameterInfo], supplied: Mapping[str, str]
) -> list[str]:
    """Problems with values supplied for a launch, one readable line each (empty = fine)."""
    problems: list[str] = []
    by_name = {param.name: param for param in params}
    for name, value in supplied.items():
        param = by_name.get(name)
        if param is None:
            known = ", ".join(by_name) or "none"
            problems.append(f"{name}: not a parameter of this scenario (parameters: {known})")
            continue
        if not isinstance(value, str):
            problems.append(f"{name}: expected text; got {describe_value(value)}")
            continue
        if value == "":
            continue
        trouble = value_problem(param, value)
        if trouble is not None:
            problems.append(f"{name}: {trouble}")
    return problems


def resolve_parameter_values(
    params: list[ParameterInfo], supplied: Mapping[str, str]
) -> dict[str, str]:
    """Effective values: a supplied non-empty value, else the default, else empty text."""
    out: dict[str, str] = {}
    for param in params:
        value = supplied.get(param.name)
        if value:
            out[param.name] = value
        else:
            out[param.name] = param.default if param.default is not None else ""
    return out


def missing_parameters(
    params: list[ParameterInfo], supplied: Mapping[str, str]
) -> list[ParameterInfo]:
    """Required parameters that got no value: a launch needs explicit consent for these."""
    return [param for param in params if param.required and not supplied.get(param.name)]


class ParameterBindingError(ValueError):
    """Binding produced a project that breaks a limit (for example a persona too long)."""

    def __init__(self, errors: list[PackageError]) -> None:
        super().__init__("; ".join(str(error) for error in errors))
        self.errors = errors


class _Loaded(Protocol):
    @property
    def project(self) -> Project | None: ...


def bind_parameters(source: Project | _Loaded, supplied: Mapping[str, str]) -> Project:
    """A new project with every prose field filled from ``supplied`` (resolved against the
    defaults), re-validated so a value that pushes a field past its limit is refused here.

    ``source`` is a Project or a LoadResult of a package that loaded.
    """
    project = source if isinstance(source, Project) else source.project
    if project is None:
        raise ValueError("the package did not load, so it has no parameters to bind")
    params, _ = scan_parameters(project)
    values = resolve_parameter_values(params, supplied)

    def fill(text: Any) -> Any:
        return substitute(text, values) if isinstance(text, str) else text

    doc = project.snapshot()
    meta, spec = doc["metadata"], doc["spec"]
    meta["description"] = fill(meta.get("description"))
    spec["goals"] = [fill(goal) for goal in spec.get("goals", [])]
    for key in ("guidelines", "restrictions"):
        spec[key] = fill(spec.get(key))
    doc["project_resources"] = {k: fill(v) for k, v in doc.get("project_resources", {}).items()}
    doc["project_skills"] = {k: fill(v) for k, v in doc.get("project_skills", {}).items()}
    for agent in doc.get("agents", []):
        for key in ("description", "persona", "rubric"):
            agent[key] = fill(agent.get(key))
        for key in ("goals", "responsibilities"):
            agent[key] = [fill(item) for item in agent.get(key, [])]
        for key in ("resource_files", "local_skills"):
            agent[key] = {k: fill(v) for k, v in agent.get(key, {}).items()}
    try:
        return Project.model_validate(doc)
    except ValidationError as exc:
        raise ParameterBindingError(translate(exc, "")) from exc
