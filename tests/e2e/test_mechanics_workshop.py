"""run_code writes into the shared folder; a ``file`` condition sees it; outputs keep it."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from tests.e2e.test_mechanics_run import assert_clean_ending, run_realm

pytestmark = [pytest.mark.slow, pytest.mark.timeout(150)]


def test_run_code_file_ends_the_realm_and_is_captured(tmp_path: Path) -> None:
    run = run_realm(tmp_path, "workshop")
    assert_clean_ending(run, "file")
    chron = run.chron

    (concluding,) = [p for p in chron.kinds("lifecycle") if p["event"] == "concluding"]
    assert concluding["detail"] == "1 file(s) match reports/*.txt: reports/forge.txt"

    (exec_,) = chron.kinds("exec")
    (result,) = chron.kinds("exec_result")
    assert exec_["agent"] == "smith" and "/realm/shared/reports/forge.txt" in exec_["code"]
    assert len(exec_["id"]) == 16
    assert result == {
        "id": exec_["id"],
        "agent": "smith",
        "exit_code": 0,
        "output": "wrote ['forge.txt']\n",
    }
    assert chron.kinds("note") == [{"agent": "smith", "text": "the forge runs hot"}]

    # The outputs were captured after the code ran and after the file condition fired (the
    # file can appear, and the condition fire, before run_code's result is recorded).
    exec_at, conclude_at, output_at = run.order(
        ("exec_result", {"agent": "smith"}),
        ("lifecycle", {"event": "concluding"}),
        ("output", {"path": "reports/forge.txt"}),
    )
    assert exec_at < output_at and conclude_at < output_at
    captured = run.realm_dir / "outputs" / "reports" / "forge.txt"
    assert captured.read_text(encoding="utf-8") == "ingots: 7\n"
    outputs = chron.kinds("output")
    assert outputs == [
        {
            "path": "reports/forge.txt",
            "bytes": 10,
            "sha256": hashlib.sha256(b"ingots: 7\n").hexdigest(),
        },
        {"path": "ledgers/*.csv", "missing": True},
    ]
    # The disks went with the teardown: no image, home or shared folder is left, only
    # what the archive reads.
    assert sorted(run.realm_dir.rglob("*.img")) == []
    assert not (run.realm_dir / "agents").exists() and not (run.realm_dir / "shared").exists()
    assert (run.realm_dir / "logs" / "smith.log").is_file()
