"""``SKILL.md``: optional YAML front matter between ``---`` lines, then the skill's text."""

from __future__ import annotations

import re
from dataclasses import dataclass

import yaml

REF_PATTERN = r"^[a-z0-9][a-z0-9._-]{0,63}$"
REF_RE = re.compile(REF_PATTERN)
_FRONT = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.DOTALL)


class SkillFileError(ValueError):
    """The SKILL.md cannot be read as a skill."""


@dataclass(frozen=True)
class SkillDoc:
    name: str
    description: str
    body: str


def parse(text: str, *, default_name: str) -> SkillDoc:
    """The skill's name, description and body; a skill without front matter is all body."""
    match = _FRONT.match(text)
    if match is None:
        return SkillDoc(name=default_name, description="", body=text.strip())
    try:
        front = yaml.safe_load(match.group(1))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        # The front matter starts on the file's second line.
        where = f" (line {mark.line + 2})" if mark is not None else ""
        raise SkillFileError(f"SKILL.md: the front matter is not valid YAML{where}") from None
    if front is None:
        front = {}
    if not isinstance(front, dict):
        raise SkillFileError("SKILL.md: the front matter must be a mapping of name, description")
    name = front.get("name", default_name)
    description = front.get("description", "")
    for key, value in (("name", name), ("description", description)):
        if not isinstance(value, str):
            raise SkillFileError(f"SKILL.md: front matter {key}: expected text")
    return SkillDoc(name=name, description=description, body=text[match.end() :].strip())


def check_ref(ref: str) -> str:
    if not REF_RE.match(ref):
        raise SkillFileError(
            f"skill ref {ref!r}: expected lowercase letters, digits, '.', '_' or '-' "
            "(at most 64, starting with a letter or digit)"
        )
    return ref
