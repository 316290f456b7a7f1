"""The notebook: the agent's own notes, one per line in ``.bearpit/notes.md``.

Notes survive sessions (a new session's system prompt carries them) and are bounded: a note
that would take the file past ``max_chars`` is refused with an error saying how full it is,
so the agent forgets something first. Nothing writes notes but the agent's own tools.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from runtime.tools import ToolDefinition, ToolFailure, object_schema


class Notebook:
    def __init__(self, path: Path, max_chars: int) -> None:
        self._path = path
        self.max_chars = max_chars

    def notes(self) -> list[str]:
        try:
            text = self._path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        return [line[2:] for line in text.splitlines() if line.startswith("- ")]

    def _write(self, notes: list[str]) -> None:
        self._path.parent.mkdir(parents=True, exist_ok=True)
        self._path.write_text("".join(f"- {n}\n" for n in notes), encoding="utf-8")

    def size(self, notes: list[str]) -> int:
        return sum(len(n) + 3 for n in notes)

    def remember(self, note: str) -> int:
        text = " ".join(note.split())
        if not text:
            raise ToolFailure("an empty note", kind="invalid_arguments")
        notes = self.notes()
        if self.size([*notes, text]) > self.max_chars:
            raise ToolFailure(
                f"the notebook is full ({self.size(notes)} of {self.max_chars} chars); "
                "forget a note first",
                kind="notebook_full",
            )
        self._write([*notes, text])
        return len(notes) + 1

    def forget(self, number: int) -> str:
        notes = self.notes()
        if not 1 <= number <= len(notes):
            raise ToolFailure(f"no note {number} (there are {len(notes)})", kind="not_found")
        gone = notes.pop(number - 1)
        self._write(notes)
        return gone

    def render(self) -> str:
        notes = self.notes()
        return "\n".join(f"{i}. {n}" for i, n in enumerate(notes, 1))

    def tools(self) -> list[ToolDefinition]:
        async def remember(args: dict[str, Any]) -> str:
            number = self.remember(args["note"])
            return f"noted as {number} ({self.size(self.notes())} of {self.max_chars} chars used)"

        async def recall(args: dict[str, Any]) -> str:
            return self.render() or "(no notes)"

        async def forget(args: dict[str, Any]) -> str:
            return f"forgot: {self.forget(args['number'])}"

        return [
            ToolDefinition(
                "remember",
                f"Keep a short note that survives sessions (notebook capped at {self.max_chars} "
                "chars).",
                object_schema({"note": {"type": "string", "minLength": 1}}, ["note"]),
                remember,
            ),
            ToolDefinition("recall", "Read your numbered notes.", object_schema({}, []), recall),
            ToolDefinition(
                "forget",
                "Delete one note by its number (see recall).",
                object_schema({"number": {"type": "integer", "minimum": 1}}, ["number"]),
                forget,
            ),
        ]
