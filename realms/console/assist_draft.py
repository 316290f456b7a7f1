"""What a Scribe session's page shows, built from the stored session alone.

A page opened (or reloaded) at any moment rebuilds everything from here: the
conversation as the user saw it, the draft's files with their located problems, each
file's diff against the saved package, the state, and the spend against the cap.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from realms.console.editing import ordered
from scribe.models import ScribeSession
from scribe.services import sessions
from scribe.services.trial import draft_elevated

STATE_TEXT = {
    "open": "Drafting",
    "proposed": "Waiting for your approval",
    "approved": "Approved and saved",
    "capped": "Budget cap spent",
}


@dataclass
class DraftFile:
    index: int
    path: str
    text: str
    status: str
    problems: list[dict[str, Any]] = field(default_factory=list)

    @property
    def numbered(self) -> list[tuple[int, str, bool]]:
        """``(line number, text, has a problem)`` for each line of the file."""
        bad = {p["line"] for p in self.problems if p.get("line")}
        text = self.text[:-1] if self.text.endswith("\n") else self.text
        return [(n, line, n in bad) for n, line in enumerate(text.split("\n"), start=1)]


@dataclass
class FileDiff:
    path: str
    status: str
    lines: list[tuple[str, str]]  # (css class, text)

    @property
    def summary(self) -> str:
        added = sum(1 for kind, _ in self.lines if kind == "add")
        removed = sum(1 for kind, _ in self.lines if kind == "del")
        if self.status == "added":
            return f"{added} line{'s' if added != 1 else ''}"
        if self.status == "removed":
            return f"{removed} line{'s' if removed != 1 else ''} removed"
        return f"+{added} -{removed} lines"


def _diff_lines(text: str) -> list[tuple[str, str]]:
    out = []
    for line in text.splitlines():
        if line.startswith(("+++", "---")):
            kind = "head"
        elif line.startswith("@@"):
            kind = "hunk"
        elif line.startswith("+"):
            kind = "add"
        elif line.startswith("-"):
            kind = "del"
        else:
            kind = "ctx"
        out.append((kind, line))
    return out


def _spend(spend: dict[str, Any]) -> dict[str, Any]:
    if not spend.get("metered"):
        return {**spend, "percent": 0}
    cap = spend.get("cap_usd") or 0
    spent = spend.get("spent_usd") or 0
    percent = min(100, round(100 * spent / cap)) if cap else 0
    return {**spend, "percent": percent}


def draft_context(session: ScribeSession) -> dict[str, Any]:
    view = sessions.session_view(session)
    validation = view["validation"]
    problems = [*validation["errors"], *validation["warnings"]]
    status = {d["path"]: d["status"] for d in view["diff"]}
    files = [
        DraftFile(
            index=f.index,
            path=f.path,
            text=f.text,
            status=status.get(f.path, "same"),
            problems=[p for p in problems if p.get("file") == f.path],
        )
        for f in ordered(view["files"])
    ]
    changes = [
        FileDiff(d["path"], d["status"], _diff_lines(d["diff"]))
        for d in view["diff"]
        if d["status"] != "same"
    ]
    state = view["state"]
    valid = bool(validation["ok"]) and bool(view["files"])
    return {
        "session": session,
        "view": view,
        "state": state,
        "state_text": STATE_TEXT.get(state, state),
        "files": files,
        "unplaced": [p for p in problems if p.get("file") not in status],
        "errors": validation["errors"],
        "warnings": validation["warnings"],
        "valid": valid,
        "changes": changes,
        "approvable": state == "proposed" and view["proposed_version"] == view["version"],
        "spend": _spend(view["spend"]),
        "elevated": draft_elevated(session) if valid else [],
        "closed": state in ("approved", "capped"),
    }
