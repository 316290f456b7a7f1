"""The platform's state is its own: private modes, no other realm's names in a
sandbox's view, and no disk image (birth config, undeclared files) left after teardown."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from chronicle import traces
from realms.forge import layout
from realms.forge.outputs import capture_outputs
from realms.forge.services import release_realm, stop_realm_sandboxes
from tests.conftest import REPO
from tests.realms.forge.conftest import script_request, start, wait_for_file

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(120)]

SLEEPER = "import time; time.sleep(300)"


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_loading_the_settings_makes_bearpit_home_private(tmp_path):
    fresh, loose = tmp_path / "fresh-home", tmp_path / "loose-home"
    loose.mkdir(mode=0o755)
    loose.chmod(0o755)
    probe = (
        "import os, django\n"
        "os.environ['DJANGO_SETTINGS_MODULE'] = 'bearpit.settings'\n"
        "django.setup()\n"
        "from django.db import connection\n"
        "connection.ensure_connection()\n"
        "mask = os.umask(0)\n"
        "print(oct(mask))\n"
    )
    for home in (fresh, loose):
        env = {k: v for k, v in os.environ.items() if not k.startswith("BEARPIT_")}
        env |= {"BEARPIT_HOME": str(home), "BEARPIT_SECRET_KEY": "x" * 50}
        done = subprocess.run(
            [sys.executable, "-c", probe], cwd=REPO, env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr[-2000:]
        assert done.stdout.strip() == "0o77"  # the platform's new files are its own
        assert _mode(home) == 0o700, home
        assert _mode(home / "bearpit.sqlite3") == 0o600


def test_realm_logs_and_directories_are_private(make_realm):
    rid = make_realm().realm_id
    start(rid, [script_request("alpha", "print('hello', flush=True)\n" + SLEEPER)])
    log = wait_for_file(layout.log_path(rid, "alpha"), done="hello")
    assert "hello" in log
    assert _mode(layout.log_path(rid, "alpha")) == 0o600
    assert _mode(layout.logs_dir(rid)) == 0o700
    assert _mode(layout.realm_dir(rid)) == 0o700
    assert _mode(layout.agent_dir(rid, "alpha")) == 0o700
    # What the sandbox must reach is opened up on purpose.
    assert _mode(layout.sockets_dir()) == 0o755
    for name in ("passwd", "group", "hosts", "hostname"):
        assert _mode(layout.etc_dir(rid, "alpha") / name) == 0o644


LIST_RUN = r"""
import json, os
seen = []
for root, dirs, files in os.walk("/run/bearpit"):
    seen += [os.path.join(root, name) for name in dirs + files]
json.dump(seen, open("/home/agent/run.json", "w"))
import time; time.sleep(300)
"""


def test_a_sandbox_sees_no_other_realm_or_agent_in_its_sockets_dir(make_realm):
    other_rid = make_realm().realm_id
    # Another realm's agent has a trace being ingested (its lock file exists).
    with traces._agent_lock(other_rid, "mallory"):
        pass
    # And an installation upgraded from a version that kept those locks in run/.
    legacy = layout.sockets_dir() / "locks"
    legacy.mkdir(exist_ok=True)
    (legacy / f"trace-{other_rid}--mallory.lock").touch()
    rid = make_realm().realm_id
    start(rid, [script_request("alpha", LIST_RUN), script_request("bravo", SLEEPER)])
    seen = json.loads(wait_for_file(layout.home_dir(rid, "alpha") / "run.json"))
    named = [p for p in seen if other_rid in p or "mallory" in p or "bravo" in p]
    assert named == [], named


NOTES = (
    "import os, time\n"
    "open('/home/agent/notes.txt', 'w').write('private')\n"
    "open('/realm/shared/draft.txt', 'w').write('undeclared')\n"
    "open('/realm/shared/final.txt', 'w').write('declared')\n"
    "print('wrote', flush=True)\n"
    "open('/home/agent/ready', 'w').write('1')\n"
    "time.sleep(300)\n"
)


def test_teardown_deletes_the_disk_images_and_keeps_outputs_and_logs(make_realm):
    rid = make_realm().realm_id
    start(
        rid, [script_request("alpha", NOTES), script_request("bravo", SLEEPER)], shared_folder=True
    )
    wait_for_file(layout.home_dir(rid, "alpha") / "ready")
    assert layout.birth_path(rid, "alpha").exists()
    images = [layout.home_image(rid, "alpha"), layout.home_image(rid, "bravo")]
    images.append(layout.shared_image(rid))
    assert all(image.exists() for image in images)
    stop_realm_sandboxes(rid, "test over")
    captured = capture_outputs(rid, ["final.txt"])
    release_realm(rid)

    # Undeclared files, the birth config (tokens) and the agent's own files went with
    # the images; nothing of a home or the shared folder is left on the host.
    assert [image for image in images if image.exists()] == []
    for agent in ("alpha", "bravo"):
        assert not layout.agent_dir(rid, agent).exists()
    assert not layout.shared_dir(rid).exists()
    leftovers = [
        p.relative_to(layout.realm_dir(rid)).as_posix() for p in layout.realm_dir(rid).rglob("*")
    ]
    assert sorted(leftovers) == [
        ".released", "logs", "logs/alpha.log", "logs/bravo.log", "outputs", "outputs/final.txt",
    ]  # fmt: skip
    # What the archive reads is still there.
    assert captured[0]["path"] == "final.txt" and captured[0]["bytes"] == 8
    assert (layout.outputs_dir(rid) / "final.txt").read_text() == "declared"
    assert "wrote" in layout.log_path(rid, "alpha").read_text()
    # A repeated release (a redelivered teardown task) finds nothing to do.
    release_realm(rid)
