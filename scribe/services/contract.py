"""The scenario contract's checks the package loader does not make, as warnings.

The loader accepts a realm with turns or a referee and no ``duration``/``stall`` ending;
the contract says such a realm must have both, or a silent realm never ends. Scribe sees
these warnings with the validator's own and fixes them before it proposes a draft.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

PROJECT = "project.json"


def _json(text: str | None) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def _has_referee(files: Mapping[str, str]) -> bool:
    for path, text in files.items():
        parts = path.split("/")
        if len(parts) == 3 and parts[0] == "agents" and parts[2] == "agent.json":
            data = _json(text)
            if isinstance(data, dict) and data.get("role") == "referee":
                return True
    return False


def contract_warnings(files: Mapping[str, str]) -> list[dict[str, Any]]:
    """Located warnings, in the validator's shape (``file, line, path, message, text``)."""
    project = _json(files.get(PROJECT))
    if not isinstance(project, dict) or not isinstance(project.get("spec"), dict):
        return []  # the validator reports a project it cannot read
    spec = project["spec"]
    turns = spec.get("turns") not in (None, False)
    referee = _has_referee(files)
    if not (turns or referee):
        return []
    conditions = spec.get("termination") if isinstance(spec.get("termination"), list) else []
    types = {c.get("type") for c in conditions if isinstance(c, dict)}
    why = "turns" if turns else "a referee"
    warnings = []
    for needed in ("duration", "stall"):
        if needed not in types:
            message = (
                f"a realm with {why} needs a {needed!r} termination condition "
                f'(for example {{"type": "{needed}", "limit": '
                f'"{"60m" if needed == "duration" else "20m"}"}}), so it ends when it goes quiet'
            )
            warnings.append(
                {
                    "file": PROJECT,
                    "line": None,
                    "path": "spec.termination",
                    "message": message,
                    "text": f"{PROJECT}: spec.termination: {message}",
                    "contract": True,
                }
            )
    return warnings
