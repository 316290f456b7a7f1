"""Run a pytest session of its own in a subprocess, as CI or a developer would."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# What the outer session chose for itself; an inner session chooses its own.
OUTER_PREFIXES = ("PYTEST_", "BEARPIT_TEST_HOME_", "BEARPIT_SANDBOX_UID_")
OUTER_NAMES = (
    "CI",
    "BEARPIT_HOME",
    "BEARPIT_COMPAT_DIR",
    "BEARPIT_TEST_FLOOR_FILE",
    "DJANGO_SETTINGS_MODULE",
)


def clean_env(**extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(OUTER_PREFIXES) and k not in OUTER_NAMES
    }
    env.update(extra)
    return env


def run_pytest(
    args: list[str], env: dict[str, str], cwd: Path = REPO, timeout: float = 150
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
