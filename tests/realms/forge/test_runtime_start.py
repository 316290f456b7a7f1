"""The runtime's start-up: nothing the agent wrote can take part in it."""

from __future__ import annotations

import json
import time

import pytest

from realms.forge import layout
from realms.forge.runcode import run_code
from realms.forge.services import deliver_birth, stop_agent_sandbox
from tests.realms.forge.conftest import script_request, start, waiting_runtime

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(120)]

# Modules the bootstrap and the runtime import, planted where an importable cwd or a
# user site would put them ahead of the real ones; each leaves a mark if imported.
PLANT = r"""
import os, site, sys
def plant(path, name):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as handle:
        handle.write(f"open('/home/agent/hijacked-{name}', 'w').write('x')\n")
    os.chmod(path, 0o644)
plant("/home/agent/runpy.py", "runpy")
plant("/home/agent/json.py", "json")
user_site = os.path.expanduser(
    f"~/.local/lib/python{sys.version_info[0]}.{sys.version_info[1]}/site-packages"
)
plant(user_site + "/usercustomize.py", "usercustomize")
with open(user_site + "/planted.pth", "w") as handle:
    handle.write("import os; open('/home/agent/hijacked-pth', 'w').write('x')\n")
print("planted", user_site)
"""


def test_modules_planted_by_run_code_are_not_imported_by_the_runtime(make_realm):
    rid = make_realm().realm_id
    start(rid, [script_request("alpha", "import time; time.sleep(300)")])
    planted = run_code(rid, "alpha", PLANT, timeout=30)
    assert planted.exit_code == 0 and "planted" in planted.output, planted.output
    home = layout.home_dir(rid, "alpha")
    assert (home / "json.py").exists() and (home / "runpy.py").exists()
    stop_agent_sandbox(rid, "alpha", "restart with the runtime")

    start(rid, [waiting_runtime("alpha")])
    # A birth config it must parse (with json) and reject: proof that it got past its
    # imports and ran its own code.
    time.sleep(0.5)
    deliver_birth(rid, "alpha", json.dumps({"nonsense": True}))
    log = layout.log_path(rid, "alpha")
    deadline = time.monotonic() + 30
    while "bad birth config" not in log.read_text() and time.monotonic() < deadline:
        time.sleep(0.1)
    hijacked = sorted(p.name for p in home.glob("hijacked-*"))
    assert hijacked == [], (hijacked, log.read_text()[-2000:])
    assert "bad birth config" in log.read_text()
