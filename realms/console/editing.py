"""The editor's files: what it offers for editing, what a post of it means, and the
package a new scenario starts from.

The editor edits the package's text files; anything that is not UTF-8 text is kept as
stored, so saving from the editor never loses a file it could not show.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from django.http import QueryDict

from realms.library import services as library
from realms.models import Scenario

# The order a person reads a package in: the manifest, then each agent, then the rest.
_FIRST = ("project.json", "project.yaml", "project.yml")


class EditorInputError(ValueError):
    """The post does not describe a files map (a tampered or truncated form)."""


@dataclass(frozen=True)
class EditorFile:
    index: int
    path: str
    text: str

    @property
    def lines(self) -> int:
        return self.text.count("\n") + 1


def _rank(path: str) -> tuple[int, str]:
    if path in _FIRST:
        return (0, path)
    parts = path.split("/")
    if parts[0] == "agents" and len(parts) == 3:
        # agent.json before persona.md within each agent folder
        return (1, f"{parts[1]}/{0 if parts[2].startswith('agent.') else 1}{parts[2]}")
    return (2, path)


def ordered(texts: Mapping[str, str]) -> list[EditorFile]:
    return [
        EditorFile(index=i, path=path, text=texts[path])
        for i, path in enumerate(sorted(texts, key=_rank))
    ]


def posted_files(post: QueryDict) -> dict[str, str]:
    """The ``path``/``content`` pairs of the editor's form, in order."""
    paths, contents = post.getlist("path"), post.getlist("content")
    if len(paths) != len(contents):
        raise EditorInputError("the form's file list is incomplete; reload the editor")
    out: dict[str, str] = {}
    for path, content in zip(paths, contents, strict=True):
        if path in out:
            raise EditorInputError(f"{path}: appears twice in the form")
        # Browsers send textarea text with CRLF line ends; packages keep LF.
        out[path] = content.replace("\r\n", "\n")
    return out


def merged_tree(stored: Scenario | None, edited: Mapping[str, str]) -> dict[str, bytes]:
    """The package a save would store: the edited text files (held to the library's rules
    for a tree; raises LibraryError), plus every stored file the editor could not show
    (binary files), unchanged."""
    tree: dict[str, bytes] = {}
    if stored is not None:
        for path, content in library.scenario_files(stored).items():
            try:
                content.decode("utf-8")
            except UnicodeDecodeError:
                tree[path] = content
    tree.update(library.tree_from_texts(edited, where="the edited package"))
    return tree


def refusal(message: str) -> dict[str, object]:
    """A problem of the whole post, shaped like the library's located ones."""
    return {"file": "", "line": None, "path": "", "message": message, "text": message}


def _json(doc: object) -> bytes:
    return (json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def template(name: str) -> dict[str, bytes]:
    """The smallest package that loads and ends by itself: one agent, a duration limit."""
    project = {
        "apiVersion": "bearpit/v1alpha1",
        "kind": "Project",
        "metadata": {"name": name, "description": "A new scenario.", "tags": []},
        "spec": {
            "goals": ["Say hello to the realm in one line."],
            "termination": [{"type": "duration", "limit": "10m"}],
        },
    }
    agent = {
        "id": "solo",
        "name": "Solo",
        "model_category": "small",
        "budget": {"max_usd": 0.5, "on_exhausted": "starve"},
    }
    return {
        "project.json": _json(project),
        "agents/solo/agent.json": _json(agent),
        "agents/solo/persona.md": b"You are Solo, a friendly voice.\n",
        "README.md": f"# {name}\n\nWhat this scenario asks, and how it ends.\n".encode(),
    }
