"""The import contracts in pyproject.toml hold on the repository, and do catch a breach.

``lint-imports`` (import-linter) checks them in CI. The breaches are planted in a copy
of the Python packages, never in the checkout.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.harness.run import REPO, clean_env

PACKAGES = ("bearpit", "realms", "ledger", "chronicle", "scribe", "runtime")
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def lint_imports(cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"],
        cwd=cwd,
        # The copy's packages, not the checkout's (installed in the environment), are read.
        env=clean_env(PYTHONPATH=str(cwd)),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def copy_packages(target: Path) -> Path:
    for package in PACKAGES:
        shutil.copytree(
            REPO / package,
            target / package,
            ignore=lambda _dir, names: [
                n for n in names if n == "__pycache__" or ("." in n and not n.endswith(".py"))
            ],
        )
    shutil.copy(REPO / "pyproject.toml", target / "pyproject.toml")
    return target


def test_the_repository_keeps_its_import_contracts() -> None:
    done = lint_imports(REPO)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Contracts: 3 kept, 0 broken." in done.stdout


@pytest.mark.parametrize(
    ("module", "planted", "broken"),
    [
        # A service importing a task points upwards.
        (
            "realms/services/launch.py",
            "from realms.tasks import provision  # noqa\n",
            "realms.services is not allowed to import realms.tasks",
        ),
        # A subsystem importing a service points upwards too.
        (
            "realms/herald/posting.py",
            "from realms.services.conclude import conclude_realm  # noqa\n",
            "realms.herald is not allowed to import realms.services",
        ),
        # The runtime importing the platform.
        (
            "runtime/tools.py",
            "import django  # noqa\n",
            "runtime is not allowed to import django",
        ),
        # Two services importing each other, even from inside a function.
        (
            "realms/services/providers.py",
            "\n\ndef _launch() -> None:\n"
            "    from realms.services.launch import launch_realm  # noqa\n",
            "No cycles are allowed in realms.services.",
        ),
    ],
    ids=["service-imports-task", "subsystem-imports-service", "runtime-imports-django", "cycle"],
)
def test_a_planted_breach_breaks_its_contract(
    tmp_path: Path, module: str, planted: str, broken: str
) -> None:
    copy = copy_packages(tmp_path)
    assert lint_imports(copy).returncode == 0  # the copy alone keeps them
    with (copy / module).open("a") as source:
        source.write(planted)
    done = lint_imports(copy)
    assert done.returncode == 1, done.stdout + done.stderr
    assert broken in done.stdout, done.stdout
