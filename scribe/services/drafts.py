"""The draft: every file of the package, versioned; confined paths; validation; the diff.

Every Scribe write goes through :func:`write_file` or :func:`delete_file`, which only
ever change the session's own draft. A path is checked by the library's own rule
(relative, no ``..``, no absolute or drive paths, no control characters), so nothing
outside the scenario can be named, let alone written.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Any

from django.db import transaction

from realms.library import files as trees
from realms.library import services as library
from scribe.models import DraftVersion, ScribeSession
from scribe.services.contract import contract_warnings
from scribe.services.errors import ScribeError

MAX_FILE_CHARS = 200_000


class PathRefused(ScribeError):
    """A tool named a path outside the draft; nothing was written."""


def current(session: ScribeSession) -> DraftVersion | None:
    return session.versions.order_by("-number").first()


def current_files(session: ScribeSession) -> dict[str, str]:
    version = current(session)
    return dict(version.files) if version is not None else {}


def confined(path: object) -> str:
    """The normalised path inside the draft, or a refusal that names the path."""
    if not isinstance(path, str) or not PurePosixPath(path.strip()).parts:
        raise PathRefused(
            "refused: path: expected a relative path inside the scenario, such as persona.md; "
            "Scribe only writes files of this scenario"
        )
    try:
        return trees.check_path(path.strip(), where="draft")
    except trees.PackageTreeError as exc:
        raise PathRefused(f"refused: {exc}; Scribe only writes files of this scenario") from exc


@transaction.atomic
def new_version(session: ScribeSession, files: Mapping[str, str], note: str) -> DraftVersion:
    latest = current(session)
    number = 1 if latest is None else latest.number + 1
    version = DraftVersion.objects.create(
        session=session, number=number, files=dict(sorted(files.items())), note=note[:200]
    )
    if session.state == ScribeSession.State.PROPOSED:
        # A change after the proposal needs proposing (and approving) again.
        session.state = ScribeSession.State.OPEN
        session.proposed_version = None
        session.save(update_fields=["state", "proposed_version", "updated_at"])
    return version


def write_file(session: ScribeSession, path: object, content: object) -> str:
    where = confined(path)
    if not isinstance(content, str):
        raise ScribeError(f"{where}: content must be text")
    if len(content) > MAX_FILE_CHARS:
        raise ScribeError(f"{where}: at most {MAX_FILE_CHARS} characters per file")
    files = current_files(session)
    files[where] = content
    _check_limits(files)
    new_version(session, files, f"write {where}")
    return where


def delete_file(session: ScribeSession, path: object) -> str:
    where = confined(path)
    files = current_files(session)
    if where not in files:
        raise ScribeError(f"{where}: not in the draft")
    del files[where]
    new_version(session, files, f"delete {where}")
    return where


def _check_limits(files: Mapping[str, str]) -> None:
    try:
        trees.check_tree(_bytes(files), where="draft")
    except trees.PackageTreeError as exc:
        raise ScribeError(str(exc)) from exc


def _bytes(files: Mapping[str, str]) -> dict[str, bytes]:
    return {path: text.encode("utf-8") for path, text in files.items()}


def as_tree(files: Mapping[str, str]) -> dict[str, bytes]:
    return _bytes(files)


def check(files: Mapping[str, str]) -> dict[str, Any]:
    """The library validator's located result, plus the contract's warnings."""
    if not files:
        return {
            "ok": False,
            "errors": [
                {
                    "file": "",
                    "line": None,
                    "path": "",
                    "message": "the draft holds no files yet",
                    "text": "the draft holds no files yet",
                }
            ],
            "warnings": [],
        }
    checked = library.check_tree(_bytes(files))
    return {**checked, "warnings": [*checked["warnings"], *contract_warnings(files)]}


def proposable(checked: Mapping[str, Any]) -> bool:
    """Valid, and nothing the contract warns about is left."""
    return bool(checked["ok"]) and not any(w.get("contract") for w in checked["warnings"])


def saved_files(session: ScribeSession) -> dict[str, str]:
    """The package as the library holds it now (nothing for a new scenario)."""
    if session.mode != ScribeSession.Mode.EDIT:
        return {}
    try:
        scenario = library.resolve(session.scenario)
    except library.NoSuchScenario:
        return {}
    return decoded(library.scenario_files(scenario))


def decoded(files: Mapping[str, bytes]) -> dict[str, str]:
    out = {}
    for path, content in files.items():
        try:
            out[path] = content.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ScribeError(
                f"{path}: not a text file; Scribe edits packages of text files only"
            ) from exc
    return out


def diff(saved: Mapping[str, str], draft: Mapping[str, str]) -> list[dict[str, str]]:
    """Each file's status and unified diff against the saved package."""
    out = []
    for path in sorted(set(saved) | set(draft)):
        before, after = saved.get(path), draft.get(path)
        if before == after:
            status = "same"
        elif before is None:
            status = "added"
        elif after is None:
            status = "removed"
        else:
            status = "changed"
        text = ""
        if status != "same":
            text = "".join(
                difflib.unified_diff(
                    (before or "").splitlines(keepends=True),
                    (after or "").splitlines(keepends=True),
                    fromfile=f"saved/{path}" if before is not None else "/dev/null",
                    tofile=f"draft/{path}" if after is not None else "/dev/null",
                )
            )
        out.append({"path": path, "status": status, "diff": text})
    return out
