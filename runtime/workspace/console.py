"""The terminal side of the workspace agent: input lines in, text out, y/n questions.

Input is read line by line on a daemon thread (so a pending read never holds up the exit)
and handed to the event loop. Multi-line input, two ways:

* a line ending in ``\\`` continues on the next line (the backslash is dropped);
* a line that is exactly ``\"\"\"`` opens a block that the next such line closes (for pastes).

While a y/n question is open the next line answers it instead. Everything written is
passed through the redactor first, so a secret cannot reach the screen even if a model
or a tool repeats it.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import TextIO

from runtime.terminal_bus import Writer
from runtime.trace import Redactor

PROMPT = "> "
CONTINUE = "… "
BLOCK = '"""'


class Console:
    def __init__(self, stdin: TextIO, stdout: Writer) -> None:
        self._in = stdin
        self._out = stdout
        # Set to the agent's redactor once its secrets are known.
        self.redact: Callable[[str], str] = Redactor([])
        self.inputs: asyncio.Queue[str] = asyncio.Queue()
        self.eof = False
        self._partial: list[str] = []
        self._in_block = False
        self._answer: asyncio.Future[str] | None = None
        self._on_input: Callable[[], None] = lambda: None

    def start(self, on_input: Callable[[], None]) -> None:
        """Begin reading; ``on_input`` is called on the loop after each line (or the end)."""
        self._on_input = on_input
        loop = asyncio.get_running_loop()

        def pump() -> None:
            while True:
                line = self._in.readline()
                if loop.is_closed():
                    return  # the session ended while this line was being typed
                try:
                    loop.call_soon_threadsafe(self._line, line)
                except RuntimeError:  # closed between the check and the call
                    return
                if not line:
                    return

        threading.Thread(target=pump, name="workspace-input", daemon=True).start()

    def _line(self, raw: str) -> None:
        if not raw:
            self.eof = True
            if self._answer is not None and not self._answer.done():
                self._answer.set_result("")
        else:
            self._take(raw.rstrip("\r\n"))
        self._on_input()

    def _take(self, line: str) -> None:
        if self._answer is not None and not self._answer.done():
            self._answer.set_result(line)
            return
        if self._in_block:
            if line.strip() == BLOCK:
                self._in_block = False
                self._submit()
            else:
                self._partial.append(line)
            return
        if line.strip() == BLOCK and not self._partial:
            self._in_block = True
            return
        if line.endswith("\\"):
            self._partial.append(line[:-1])
            self.write(CONTINUE)
            return
        self._partial.append(line)
        self._submit()

    def _submit(self) -> None:
        text = "\n".join(self._partial).strip()
        self._partial = []
        if text:
            self.inputs.put_nowait(text)

    def clear_partial(self) -> bool:
        """Drop a half-typed multi-line input; True if there was one."""
        had = bool(self._partial) or self._in_block
        self._partial, self._in_block = [], False
        return had

    async def ask(self, question: str) -> bool:
        """Put a y/n question; True only on y or yes. The end of input answers no."""
        if self.eof:
            return False
        loop = asyncio.get_running_loop()
        self._answer = loop.create_future()
        self.write(f"{question} [y/N] ")
        try:
            answer = await self._answer
        finally:
            self._answer = None
        return answer.strip().lower() in ("y", "yes")

    def write(self, text: str) -> None:
        self._out.write(self.redact(text))
        self._out.flush()

    def say(self, text: str) -> None:
        self.write(text if text.endswith("\n") else text + "\n")

    def prompt(self) -> None:
        self.write(PROMPT)
