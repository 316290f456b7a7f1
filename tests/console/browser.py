"""The console as a person sees it: ``pit_serve`` as a subprocess on a fresh home, and
Debian's Chromium driven by Playwright, signed in through the URL the server printed.

Every page a test looks at can be checked with axe-core (the vendored copy in
``static/vendor``) and saved as a screenshot under ``test-artifacts/screenshots/``
(``BEARPIT_TEST_ARTIFACTS`` moves it), so a reviewer sees what the test saw.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from playwright.sync_api import Browser, Page, Playwright, sync_playwright

from tests.e2e.pitrun import REPO, free_port, pit_env, start_pit, stop_everything, wait_for_line

AXE = REPO / "static" / "vendor" / "axe.min.js"
ARTIFACTS = Path(os.environ.get("BEARPIT_TEST_ARTIFACTS", REPO / "test-artifacts"))
# Violations at these impacts fail a page; "moderate" and "minor" are reported, not fatal.
FATAL_IMPACTS = ("serious", "critical")


@dataclass
class Served:
    base_url: str
    login_url: str
    home: Path
    log: Path
    proc: subprocess.Popen[bytes]

    def output(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")


@contextmanager
def serve(workdir: Path, **env: str) -> Iterator[Served]:
    """``pit_serve`` on a free port with its own BEARPIT_HOME, stopped (and everything it
    started) on exit."""
    home = workdir / "home"
    log = workdir / "pit_serve.log"
    port = free_port()
    environment = pit_env(home, **env)
    proc = start_pit(["pit_serve", "--port", str(port)], environment, log)
    try:
        text = wait_for_line(log, "login: ", proc, timeout=120)
        (line,) = [x for x in text.splitlines() if x.startswith("login: ")]
        yield Served(
            base_url=f"http://127.0.0.1:{port}",
            login_url=line.removeprefix("login: ").strip(),
            home=home,
            log=log,
            proc=proc,
        )
    finally:
        shut_down(proc, environment, workdir)
        stop_everything(home, proc)


def shut_down(proc: subprocess.Popen[bytes], env: dict[str, str], workdir: Path) -> None:
    """Stop the server as the operator does (SIGTERM), then reap what the realms it left
    running still hold (sandboxes, their mounted homes), so no mount outlives the test."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
    with (workdir / "pit_reap.log").open("wb") as out:
        subprocess.run(
            [sys.executable, "manage.py", "pit_reap", "--force"],
            cwd=REPO,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            timeout=120,
            check=False,
        )


def chromium_path() -> str:
    found = shutil.which("chromium")
    if found is None:
        raise RuntimeError("Debian's chromium is not installed: apt-get install chromium")
    return found


@contextmanager
def chromium() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        browser = launch(playwright)
        try:
            yield browser
        finally:
            browser.close()


def launch(playwright: Playwright) -> Browser:
    # --no-sandbox: the tests run as root, where Chromium's own sandbox cannot start.
    return playwright.chromium.launch(executable_path=chromium_path(), args=["--no-sandbox"])


def signed_in(browser: Browser, served: Served) -> Page:
    """A fresh browser context, signed in the way the operator does it: by opening the
    printed URL once."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.goto(served.login_url)
    page.wait_for_url(f"{served.base_url}/")
    return page


def screenshot(page: Page, name: str) -> Path:
    path = ARTIFACTS / "screenshots" / f"{name}.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(path), full_page=True)
    return path


def accessibility_violations(page: Page) -> list[dict[str, Any]]:
    """axe-core's violations on the page as it is now, serious and critical ones only."""
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.add_script_tag(path=str(AXE))
    result = page.evaluate("async () => await window.axe.run(document)")
    return [v for v in result["violations"] if v.get("impact") in FATAL_IMPACTS]


def describe(violations: list[dict[str, Any]]) -> str:
    lines = []
    for v in violations:
        targets = ", ".join(str(n["target"]) for n in v["nodes"][:5])
        lines.append(f"{v['impact']} {v['id']}: {v['help']} — {targets}")
    return "\n".join(lines)


def assert_accessible(page: Page, name: str) -> None:
    """Screenshot the page, then fail on any serious or critical axe-core violation."""
    screenshot(page, name)
    violations = accessibility_violations(page)
    assert not violations, f"{name}: accessibility violations:\n{describe(violations)}"
