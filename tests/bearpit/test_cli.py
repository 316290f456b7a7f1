"""The ``pit`` console script: ``pit --help`` lists every verb with the first line of its
help, an unknown verb is one line and exit 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import get_commands, load_command_class

from tests.e2e.pitrun import REPO, pit_env

pytestmark = [pytest.mark.timeout(60)]


def pit(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bearpit.cli", *args],
        cwd=REPO,
        env=pit_env(home),
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def test_help_lists_each_verb_with_its_commands_help(tmp_path: Path) -> None:
    done = pit(tmp_path / "home", "--help")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    usage = "usage: pit VERB [ARGS…]   (pit VERB --help for its arguments)"
    assert lines[:3] == [usage, "", "verbs:"]
    listed = {}
    for line in lines[3:]:
        verb, _, text = line.strip().partition(" ")
        listed[verb] = text.strip()
    expected = {}
    for name, app in get_commands().items():
        if name.startswith("pit_"):
            text = str(load_command_class(app, name).help).strip()
            expected[name.removeprefix("pit_")] = text.splitlines()[0]
    assert listed == expected
    assert {"trace", "realms", "version", "reap", "keys", "status"} <= set(listed)
    assert [line.strip().split()[0] for line in lines[3:]] == sorted(listed)
    assert pit(tmp_path / "home", "help").stdout == done.stdout


def test_an_unknown_verb_is_one_line(tmp_path: Path) -> None:
    done = pit(tmp_path / "home", "trase")
    assert done.returncode == 2 and done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert line.startswith("pit: unknown verb 'trase'; known: agent, archive, ")
    assert "trace" in line and "version" in line
