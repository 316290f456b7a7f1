"""The built-in skills, shipped as ``builtin/<name>/SKILL.md`` beside this module."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from realms.skills.skillfile import SkillDoc, parse

BUILTIN_DIR = Path(__file__).resolve().parent / "builtin"


@cache
def names() -> tuple[str, ...]:
    """Every built-in skill, by folder name, sorted."""
    return tuple(sorted(p.name for p in BUILTIN_DIR.iterdir() if (p / "SKILL.md").is_file()))


def folder(name: str) -> Path:
    if name not in names():
        raise KeyError(name)
    return BUILTIN_DIR / name


@cache
def doc(name: str) -> SkillDoc:
    return parse((folder(name) / "SKILL.md").read_text(encoding="utf-8"), default_name=name)


def text(name: str) -> str:
    """What an agent is given for the skill: SKILL.md without its front matter."""
    return doc(name).body
