"""Built-in file tools, contained in the workspace. Offered only when allowlisted.

The sandbox is the real boundary; containment here keeps a confused model from wandering and
gives it a clear error instead.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from runtime.tools import ToolDefinition, ToolFailure, object_schema

MAX_READ_CHARS = 100_000
MAX_LIST_ENTRIES = 500
MAX_GREP_MATCHES = 200


def _resolve(root: Path, raw: str) -> Path:
    path = Path(raw).expanduser()
    candidate = (path if path.is_absolute() else root / path).resolve()
    if not candidate.is_relative_to(root):
        raise ToolFailure(f"path escapes the workspace: {raw}", kind="workspace_escape")
    return candidate


def _text(path: Path, raw: str) -> str:
    if not path.is_file():
        raise ToolFailure(f"no such file: {raw}", kind="not_found")
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ToolFailure(f"not a UTF-8 text file: {raw}") from None


def file_tools(workspace: Path) -> list[ToolDefinition]:
    root = workspace.resolve()

    async def read_file(args: dict[str, Any]) -> str:
        text = _text(_resolve(root, args["path"]), args["path"])
        lines = text.splitlines()
        offset = args.get("offset", 0)
        limit = args.get("limit", len(lines))
        chunk = "\n".join(lines[offset : offset + limit])
        if len(chunk) > MAX_READ_CHARS:
            chunk = chunk[:MAX_READ_CHARS] + "\n... (truncated; use offset/limit)"
        rest = len(lines) - (offset + limit)
        return chunk + (f"\n... ({rest} more lines)" if rest > 0 else "")

    async def write_file(args: dict[str, Any]) -> str:
        path = _resolve(root, args["path"])
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(args["content"], encoding="utf-8")
        return f"wrote {len(args['content'])} chars to {args['path']}"

    async def edit_file(args: dict[str, Any]) -> str:
        path = _resolve(root, args["path"])
        text = _text(path, args["path"])
        count = text.count(args["old_text"])
        if count != 1:
            raise ToolFailure(f"old_text must occur exactly once in {args['path']}; found {count}")
        path.write_text(text.replace(args["old_text"], args["new_text"], 1), encoding="utf-8")
        return f"edited {args['path']}"

    async def list_files(args: dict[str, Any]) -> str:
        pattern = args.get("pattern", "**/*")
        found = sorted(
            str(p.relative_to(root))
            for p in root.glob(pattern)
            if p.resolve().is_relative_to(root) and not p.name.startswith(".")
        )
        if len(found) > MAX_LIST_ENTRIES:
            return "\n".join(found[:MAX_LIST_ENTRIES]) + f"\n... ({len(found)} entries in all)"
        return "\n".join(found) or "(no matches)"

    async def grep(args: dict[str, Any]) -> str:
        try:
            regex = re.compile(args["pattern"])
        except re.error as exc:
            raise ToolFailure(f"bad regular expression: {exc}") from None
        base = _resolve(root, args.get("path", "."))
        files = [base] if base.is_file() else sorted(p for p in base.rglob("*") if p.is_file())
        hits: list[str] = []
        for file in files:
            try:
                lines = file.read_text(encoding="utf-8").splitlines()
            except (UnicodeDecodeError, OSError):
                continue
            for number, line in enumerate(lines, 1):
                if regex.search(line):
                    hits.append(f"{file.relative_to(root)}:{number}: {line[:300]}")
                    if len(hits) >= MAX_GREP_MATCHES:
                        return "\n".join(hits) + "\n... (more matches not shown)"
        return "\n".join(hits) or "(no matches)"

    path_prop = {"type": "string", "description": "path relative to your home"}
    return [
        ToolDefinition(
            "read_file",
            "Read a UTF-8 text file from your workspace (paged by lines).",
            object_schema(
                {
                    "path": path_prop,
                    "offset": {"type": "integer", "minimum": 0},
                    "limit": {"type": "integer", "minimum": 1},
                },
                ["path"],
            ),
            read_file,
        ),
        ToolDefinition(
            "write_file",
            "Create or overwrite a text file in your workspace.",
            object_schema({"path": path_prop, "content": {"type": "string"}}, ["path", "content"]),
            write_file,
        ),
        ToolDefinition(
            "edit_file",
            "Replace text that occurs exactly once in a file.",
            object_schema(
                {
                    "path": path_prop,
                    "old_text": {"type": "string", "minLength": 1},
                    "new_text": {"type": "string"},
                },
                ["path", "old_text", "new_text"],
            ),
            edit_file,
        ),
        ToolDefinition(
            "list_files",
            "List files in your workspace matching a glob pattern (default **/*).",
            object_schema({"pattern": {"type": "string"}}, []),
            list_files,
        ),
        ToolDefinition(
            "grep",
            "Search workspace files for a regular expression.",
            object_schema({"pattern": {"type": "string"}, "path": path_prop}, ["pattern"]),
            grep,
        ),
    ]
