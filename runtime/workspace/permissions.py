"""Who decides whether a shell command runs: the permission hook of the shell tool.

* ``deny``: no command runs.
* ``allow``: a command runs only if it matches the allow-list.
* ``ask``: an allow-listed command runs; any other is put to the person at the terminal,
  and runs only on ``y``/``yes``.

An allow-list entry is a glob (``pytest *``, ``git diff*``) or, without glob characters, a
command prefix that ends at a word boundary (``git status`` admits ``git status -s``, not
``git statusx``). A command holding shell control syntax (``;``, ``&``, ``|``, ``>``, ``<``,
backquotes, ``$(``, a newline) never matches the allow-list, so an allowed prefix cannot
carry a second command; in ``ask`` mode such a command is asked about like any other.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from runtime.workspace.config import ShellSettings

Ask = Callable[[str], Awaitable[bool]]
_CONTROL = re.compile(r"[;&|<>`\n\r]|\$\(")
_GLOB = re.compile(r"[*?\[]")


def allow_listed(command: str, allow: list[str]) -> bool:
    text = command.strip()
    if not text or _CONTROL.search(text):
        return False
    for entry in allow:
        pattern = entry.strip()
        if not pattern:
            continue
        if _GLOB.search(pattern):
            if fnmatch.fnmatchcase(text, pattern):
                return True
        elif text == pattern or text.startswith(pattern + " "):
            return True
    return False


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    reason: str  # how it was decided: allow_list, asked_yes, asked_no, deny_mode, not_listed


class ShellPermission:
    def __init__(self, settings: ShellSettings, ask: Ask) -> None:
        self.mode = settings.mode
        self._allow = list(settings.allow)
        self._ask = ask

    async def decide(self, command: str) -> Verdict:
        if self.mode == "deny":
            return Verdict(False, "deny_mode")
        if allow_listed(command, self._allow):
            return Verdict(True, "allow_list")
        if self.mode == "allow":
            return Verdict(False, "not_listed")
        if await self._ask(command):
            return Verdict(True, "asked_yes")
        return Verdict(False, "asked_no")

    def describe(self) -> str:
        listed = ", ".join(self._allow) or "nothing"
        if self.mode == "deny":
            return "shell commands are refused (deny mode)"
        if self.mode == "allow":
            return f"only allow-listed shell commands run ({listed})"
        return f"shell commands are asked about at the terminal, except allow-listed ({listed})"
