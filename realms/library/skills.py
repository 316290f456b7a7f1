"""The skills library: the built-in skills and the operator's own.

User skills are folders under ``BEARPIT_HOME/skills/<ref>/``, each with a ``SKILL.md`` at
its top, so the package loader can copy one into an agent that names it
(``{"source": "user", "ref": …}``). Every write goes to a staging folder first and is
renamed into place, so a refused or failed import leaves the library as it was.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from realms.library import files as trees
from realms.skills import builtin
from realms.skills.skillfile import SkillDoc, SkillFileError, check_ref, parse
from realms.skills.user import user_root

BUILTIN = "builtin"
USER = "user"
SOURCES = (BUILTIN, USER)
SKILL_FILE = "SKILL.md"


class SkillError(Exception):
    """A skills-library operation was refused; nothing was changed."""


class NoSuchSkill(SkillError):
    pass


class SkillExists(SkillError):
    pass


class NotDeletable(SkillError):
    pass


@dataclass(frozen=True)
class Skill:
    source: str
    ref: str
    folder: Path

    def files(self) -> dict[str, bytes]:
        try:
            return trees.read_folder(self.folder)
        except trees.PackageTreeError as exc:
            raise SkillError(f"{self.source}/{self.ref}: {exc}") from exc

    def text(self) -> str:
        return (self.folder / SKILL_FILE).read_text(encoding="utf-8")

    def doc(self) -> SkillDoc:
        try:
            return parse(self.text(), default_name=self.ref)
        except (SkillFileError, UnicodeDecodeError) as exc:
            return SkillDoc(name=self.ref, description=f"(unreadable: {exc})", body="")

    @property
    def editable(self) -> bool:
        return self.source == USER

    def summary(self, doc: SkillDoc | None = None) -> dict[str, Any]:
        """Where it lives and what it says it is: a line of a list, in the API or the console."""
        doc = doc or self.doc()
        return {
            "source": self.source,
            "ref": self.ref,
            "name": doc.name,
            "description": doc.description,
            "editable": self.editable,
        }


def _ref(ref: str) -> str:
    try:
        return check_ref(ref)
    except SkillFileError as exc:
        raise SkillError(str(exc)) from exc


def _user_skills() -> list[Skill]:
    root = user_root()
    if not root.is_dir():
        return []
    found = []
    for entry in sorted(root.iterdir(), key=lambda p: p.name):
        if entry.is_symlink() or not entry.is_dir() or entry.name.startswith("."):
            continue
        skill_file = entry / SKILL_FILE
        if skill_file.is_file() and not skill_file.is_symlink():
            found.append(Skill(USER, entry.name, entry))
    return found


def list_skills() -> list[Skill]:
    shipped = [Skill(BUILTIN, name, builtin.folder(name)) for name in builtin.names()]
    return shipped + _user_skills()


def get_skill(source: str, ref: str) -> Skill:
    if source not in SOURCES:
        raise NoSuchSkill(f"skill source {source!r}: expected one of {', '.join(SOURCES)}")
    _ref(ref)
    if source == BUILTIN:
        if ref not in builtin.names():
            raise NoSuchSkill(f"no built-in skill named {ref!r}")
        return Skill(BUILTIN, ref, builtin.folder(ref))
    folder = user_root() / ref
    if folder.is_symlink() or not (folder / SKILL_FILE).is_file():
        raise NoSuchSkill(f"no user skill named {ref!r}")
    return Skill(USER, ref, folder)


def read_skill_file(skill: Skill, path: str) -> bytes:
    """One file of the skill; the path must stay inside the skill's folder."""
    try:
        clean = trees.check_path(path, where="path")
    except trees.PackageTreeError as exc:
        raise SkillError(str(exc)) from exc
    files = skill.files()
    if clean not in files:
        raise NoSuchSkill(f"{skill.source}/{skill.ref}: no file {clean!r}")
    return files[clean]


def export_zip(skill: Skill) -> bytes:
    return trees.build_zip(skill.files(), top=skill.ref)


def _check_skill_tree(files: Mapping[str, bytes], where: str) -> tuple[dict[str, bytes], SkillDoc]:
    try:
        checked = trees.check_tree(files, where=where)
    except trees.PackageTreeError as exc:
        raise SkillError(str(exc)) from exc
    if SKILL_FILE not in checked:
        _, inner = trees.strip_common_folder(checked)
        if SKILL_FILE not in inner:
            raise SkillError(f"{where}: a skill needs a {SKILL_FILE} at its top")
        checked = inner
    try:
        text = checked[SKILL_FILE].decode("utf-8")
        doc = parse(text, default_name="")
    except UnicodeDecodeError:
        raise SkillError(f"{where}: {SKILL_FILE}: is not UTF-8 text") from None
    except SkillFileError as exc:
        raise SkillError(f"{where}: {exc}") from exc
    if not doc.body:
        raise SkillError(f"{where}: {SKILL_FILE}: the skill has no text after its front matter")
    return checked, doc


def ref_for(files: Mapping[str, bytes], *, where: str, fallback: str = "") -> str:
    """The ref an upload names for itself: its SKILL.md's name, else its folder's."""
    _, doc = _check_skill_tree(files, where)
    top, _ = trees.strip_common_folder(dict(files))
    ref = doc.name or top or fallback
    if not ref:
        raise SkillError(f"{where}: give ?ref=… or a name in the {SKILL_FILE} front matter")
    return ref


def _write(ref: str, files: Mapping[str, bytes], *, replace: bool) -> Skill:
    root = user_root()
    root.mkdir(parents=True, exist_ok=True)
    target = root / ref
    if target.exists() or target.is_symlink():
        if not replace:
            raise SkillExists(f"a user skill named {ref!r} already exists")
        if target.is_symlink() or not target.is_dir():
            raise SkillError(f"{target}: is not a skill folder; remove it by hand")
    staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=root))
    try:
        trees.write_folder(files, staging / "skill")
        if target.exists():
            (staging / "old").mkdir()
            target.rename(staging / "old" / ref)
        (staging / "skill").rename(target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return Skill(USER, ref, target)


def create_skill(ref: str, text: str) -> Skill:
    """A new user skill holding just its SKILL.md."""
    _ref(ref)
    files, _ = _check_skill_tree({SKILL_FILE: text.encode("utf-8")}, where=SKILL_FILE)
    return _write(ref, files, replace=False)


def import_skill(files: Mapping[str, bytes], *, ref: str, where: str) -> Skill:
    """A skill folder (from a zip, a folder upload or one file), replacing a user skill."""
    _ref(ref)
    checked, _ = _check_skill_tree(files, where)
    return _write(ref, checked, replace=True)


def import_zip(data: bytes, *, ref: str | None, where: str) -> Skill:
    try:
        files = trees.read_zip(data, where=where)
    except trees.PackageTreeError as exc:
        raise SkillError(str(exc)) from exc
    fallback = PurePosixPath(where).stem
    return import_skill(
        files, ref=ref or ref_for(files, where=where, fallback=fallback), where=where
    )


def delete_skill(ref: str) -> None:
    _ref(ref)
    folder = user_root() / ref
    if folder.is_dir() and not folder.is_symlink():
        shutil.rmtree(folder)
        return
    if ref in builtin.names():
        raise NotDeletable(f"{ref!r} is a built-in skill; built-in skills cannot be deleted")
    raise NoSuchSkill(f"no user skill named {ref!r}")
