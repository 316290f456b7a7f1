"""The console's front-end libraries are the pinned files their manifest records."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys

from tests.e2e.pitrun import REPO

VENDOR = REPO / "static" / "vendor"


def test_every_vendored_file_matches_its_recorded_checksum() -> None:
    manifest = json.loads((VENDOR / "manifest.json").read_text())
    recorded = {
        name: spec["sha256"] for lib in manifest["libraries"] for name, spec in lib["files"].items()
    }
    assert {"htmx.min.js", "uPlot.iife.min.js", "axe.min.js"} <= set(recorded)
    for lib in manifest["libraries"]:
        assert lib["version"][0].isdigit(), f"{lib['package']}: pin an exact version"
        assert lib["integrity"].startswith("sha512-"), lib["package"]
    on_disk = {p.name for p in VENDOR.iterdir()} - {"manifest.json"}
    assert on_disk == set(recorded), "a file in static/vendor that the manifest does not record"
    for name, digest in recorded.items():
        assert hashlib.sha256((VENDOR / name).read_bytes()).hexdigest() == digest, name


def test_the_vendor_script_checks_the_files(tmp_path) -> None:
    script = REPO / "scripts" / "vendor-static"
    ok = subprocess.run([sys.executable, script, "--check"], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stdout + ok.stderr
