"""``manage.py pit_params PATH``: a package's parameters, their origins and uses."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command

from tests.realms.packages.helpers import COMPAT


def run(*args):
    out, err = io.StringIO(), io.StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


@pytest.mark.compat
def test_params_lists_origins_bounds_and_uses():
    out, _ = run("pit_params", str(COMPAT / "poker-table"))
    assert out.splitlines() == [
        "Parameters (* = required; [origin] of the default):",
        "    hands (int) = '10' [inline] — How many hands the table plays (the realm's 12h cap "
        "fits about 24 at the observed 25-30 min per hand)",
        "      min 1; max 24",
        "      used in: spec.goals[0], spec.guidelines",
    ]
    out, _ = run("pit_params", str(COMPAT / "param-relay"))
    assert "      choices: brisk, formal, playful" in out
    out, _ = run("pit_params", str(COMPAT / "toolcheck"))
    assert out.strip() == "No parameters."


def test_params_on_an_invalid_package(tmp_path):
    with pytest.raises(CommandError):
        call_command(
            "pit_params", str(tmp_path / "missing"), stdout=io.StringIO(), stderr=io.StringIO()
        )
