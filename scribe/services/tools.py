"""The tools Scribe's model may call, and what each does.

Reading tools see the format reference, the built-in skills and the library (read only).
Writing tools change only the session's own draft (``drafts``): a path outside it is
refused, and the refusal is shown to the user as well as returned to the model.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from realms.library import services as library
from realms.skills import builtin
from scribe.models import ScribeSession
from scribe.services import drafts
from scribe.services.errors import ScribeError

log = logging.getLogger(__name__)

REFERENCE_CHUNK = 12_000
FILE_CHUNK = 20_000


@dataclass
class Outcome:
    """What a tool call gives back: the model's result, the user's lines, whether to stop."""

    result: str
    lines: list[dict[str, str]] = field(default_factory=list)
    ends_turn: bool = False
    proposed: bool = False
    failed_proposal: bool = False


def _fn(name: str, description: str, properties: dict[str, Any], required: list[str]) -> Any:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": properties,
                "required": required,
                "additionalProperties": False,
            },
        },
    }


_PATH = {"type": "string", "description": "relative path inside the package, e.g. project.json"}
_OFFSET = {"type": "integer", "minimum": 0, "description": "character offset to read from"}

TOOLS = [
    _fn(
        "read_format_reference",
        "Read the package format reference (Markdown), in chunks.",
        {"offset": _OFFSET},
        [],
    ),
    _fn("list_skills", "List the built-in skills agents can be given.", {}, []),
    _fn("read_skill", "Read one built-in skill.", {"name": {"type": "string"}}, ["name"]),
    _fn("list_scenarios", "List the scenarios in the library (read only).", {}, []),
    _fn(
        "read_scenario",
        "List a library scenario's files, or read one of them (read only).",
        {"scenario": {"type": "string"}, "path": _PATH, "offset": _OFFSET},
        ["scenario"],
    ),
    _fn("list_draft", "List the files of the draft.", {}, []),
    _fn("read_draft_file", "Read one file of the draft.", {"path": _PATH}, ["path"]),
    _fn(
        "write_draft_file",
        "Write (create or replace) one file of the draft. Only the draft changes; nothing "
        "is saved until the user approves.",
        {"path": _PATH, "content": {"type": "string"}},
        ["path", "content"],
    ),
    _fn("delete_draft_file", "Remove one file from the draft.", {"path": _PATH}, ["path"]),
    _fn(
        "validate_draft",
        "Validate the draft with the package validator; returns located errors and warnings.",
        {},
        [],
    ),
    _fn(
        "ask_user",
        "Ask the user a question; the turn ends and their answer is the next message.",
        {"question": {"type": "string"}},
        ["question"],
    ),
    _fn(
        "propose_draft",
        "Propose the draft for the user's review and approval. Refused while the validator "
        "reports errors or contract warnings.",
        {"summary": {"type": "string", "description": "what the draft is and what changed"}},
        ["summary"],
    ),
]
NAMES = frozenset(tool["function"]["name"] for tool in TOOLS)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _chunk(text: str, offset: object, size: int) -> str:
    start = offset if isinstance(offset, int) and offset >= 0 else 0
    part = text[start : start + size]
    rest = len(text) - start - len(part)
    more = f"\n\n[{rest} more characters: read again with offset={start + len(part)}]"
    return part + (more if rest > 0 else "")


def _reference(session: ScribeSession, args: dict[str, Any]) -> Outcome:
    text = (settings.BASE_DIR / "docs" / "package-format.md").read_text(encoding="utf-8")
    return Outcome(_chunk(text, args.get("offset"), REFERENCE_CHUNK))


def _skills(session: ScribeSession, args: dict[str, Any]) -> Outcome:
    return Outcome(
        _json([{"name": n, "description": builtin.doc(n).description} for n in builtin.names()])
    )


def _skill(session: ScribeSession, args: dict[str, Any]) -> Outcome:
    name = str(args.get("name", ""))
    if name not in builtin.names():
        raise ScribeError(f"no built-in skill named {name!r}; list_skills lists them")
    return Outcome(builtin.text(name))


def _scenarios(session: ScribeSession, args: dict[str, Any]) -> Outcome:
    library.sync_examples()
    return Outcome(
        _json(
            [
                {"name": s.name, "title": s.title, "source": s.source}
                for s in library.list_scenarios()
            ]
        )
    )


def _scenario(session: ScribeSession, args: dict[str, Any]) -> Outcome:
    library.sync_examples()
    try:
        scenario = library.resolve(str(args.get("scenario", "")))
    except library.LibraryError as exc:
        raise ScribeError(str(exc)) from exc
    files = library.scenario_files(scenario)
    if not args.get("path"):
        return Outcome(_json(sorted(files)))
    path = drafts.confined(args["path"])
    if path not in files:
        raise ScribeError(f"{scenario.name}: no file {path}")
    return Outcome(_chunk(files[path].decode("utf-8", "replace"), args.get("offset"), FILE_CHUNK))


def _list_draft(session: ScribeSession, args: dict[str, Any]) -> Outcome:
    files = drafts.current_files(session)
    return Outcome(_json({path: len(text) for path, text in files.items()}))


def _read_draft(session: ScribeSession, args: dict[str, Any]) -> Outcome:
    path = drafts.confined(args.get("path"))
    files = drafts.current_files(session)
    if path not in files:
        raise ScribeError(f"{path}: not in the draft")
    return Outcome(files[path])


def _write(session: ScribeSession, args: dict[str, Any]) -> Outcome:
    path = drafts.write_file(session, args.get("path"), args.get("content"))
    return Outcome(f"wrote {path} into the draft (not saved until the user approves)")


def _delete(session: ScribeSession, args: dict[str, Any]) -> Outcome:
    path = drafts.delete_file(session, args.get("path"))
    return Outcome(f"removed {path} from the draft")


def _validate(session: ScribeSession, args: dict[str, Any]) -> Outcome:
    return Outcome(_json(drafts.check(drafts.current_files(session))))


def _ask(session: ScribeSession, args: dict[str, Any]) -> Outcome:
    question = str(args.get("question", "")).strip()
    if not question:
        raise ScribeError("question: must not be empty")
    return Outcome(
        "the question was shown to the user; their answer is the next message",
        lines=[{"kind": "question", "text": question, "name": "ask_user"}],
        ends_turn=True,
    )


def _propose(session: ScribeSession, args: dict[str, Any]) -> Outcome:
    version = drafts.current(session)
    files = version.files if version is not None else {}
    checked = drafts.check(files)
    if version is None or not drafts.proposable(checked):
        problems = [*checked["errors"], *[w for w in checked["warnings"] if w.get("contract")]]
        return Outcome(
            "not proposed: fix these first, then propose again: "
            + _json([p["text"] for p in problems]),
            failed_proposal=True,
        )
    session.state = ScribeSession.State.PROPOSED
    session.proposed_version = version.number
    session.save(update_fields=["state", "proposed_version", "updated_at"])
    summary = str(args.get("summary", "")).strip()
    return Outcome(
        "proposed: the user now reviews each file's diff and approves or asks for changes",
        lines=[{"kind": "draft", "text": summary, "name": f"v{version.number}"}],
        proposed=True,
    )


_HANDLERS = {
    "read_format_reference": _reference,
    "list_skills": _skills,
    "read_skill": _skill,
    "list_scenarios": _scenarios,
    "read_scenario": _scenario,
    "list_draft": _list_draft,
    "read_draft_file": _read_draft,
    "write_draft_file": _write,
    "delete_draft_file": _delete,
    "validate_draft": _validate,
    "ask_user": _ask,
    "propose_draft": _propose,
}


def run(session: ScribeSession, name: str, args: dict[str, Any]) -> Outcome:
    """Run one tool; a refusal is the model's result and a line the user sees."""
    try:
        return _HANDLERS[name](session, args)
    except drafts.PathRefused as exc:
        return Outcome(str(exc), lines=[{"kind": "error", "text": str(exc), "name": name}])
    except ScribeError as exc:
        return Outcome(f"error: {exc}")
    except Exception as exc:
        # A bug of ours must not cut the user's stream short without a word.
        log.exception("Scribe tool %s failed", name)
        text = f"the tool {name} failed ({type(exc).__name__}); the draft is unchanged by it"
        return Outcome(f"error: {text}", lines=[{"kind": "error", "text": text, "name": name}])
