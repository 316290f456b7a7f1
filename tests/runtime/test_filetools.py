from __future__ import annotations

import pytest

from runtime.filetools import file_tools
from runtime.tools import ToolCall, ToolRegistry

pytestmark = pytest.mark.timeout(30)


def registry(tmp_path, allow):
    reg = ToolRegistry(allow, 10)
    for tool in file_tools(tmp_path):
        reg.add_builtin(tool)
    return reg


async def run(reg, name, **args):
    return await reg.dispatch(ToolCall("c", name, "", args))


async def test_file_tools_work_inside_the_workspace(tmp_path):
    reg = registry(tmp_path, ["read_file", "write_file", "edit_file", "list_files", "grep"])
    assert (
        await run(reg, "write_file", path="notes/a.txt", content="one\ntwo\nthree")
    ).outcome == "success"
    assert (
        await run(reg, "read_file", path="notes/a.txt", offset=1, limit=1)
    ).output == "two\n... (1 more lines)"
    assert (
        await run(reg, "edit_file", path="notes/a.txt", old_text="two", new_text="2")
    ).outcome == "success"
    assert (tmp_path / "notes" / "a.txt").read_text() == "one\n2\nthree"
    twice = await run(reg, "edit_file", path="notes/a.txt", old_text="e", new_text="E")
    assert twice.outcome == "error" and "exactly once" in twice.output
    assert (await run(reg, "list_files")).output == "notes\nnotes/a.txt"
    assert (await run(reg, "grep", pattern="^thr")).output == "notes/a.txt:3: three"


async def test_paths_cannot_escape_and_unlisted_tools_are_hidden(tmp_path):
    (tmp_path.parent / "outside.txt").write_text("secret")
    reg = registry(tmp_path, ["read_file"])
    escaped = await run(reg, "read_file", path="../outside.txt")
    assert escaped.error_kind == "workspace_escape"
    (tmp_path / "link").symlink_to(tmp_path.parent / "outside.txt")
    assert (await run(reg, "read_file", path="link")).error_kind == "workspace_escape"
    assert reg.names() == ["read_file"]
    assert (await run(reg, "write_file", path="x", content="y")).error_kind == "unknown_tool"
    # Without an allowlist no built-in tool is offered at all.
    assert registry(tmp_path, None).names() == []
