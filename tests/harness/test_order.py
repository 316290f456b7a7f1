"""Tests that share a session's state leave it usable whatever runs after them."""

from __future__ import annotations

import stat
from pathlib import Path

from ledger import keystore
from tests.realms.forge.conftest import escape_targets


def test_the_escape_probes_keystore_is_one_the_ledger_can_still_use(settings, tmp_path):
    # The forge tests put a keystore into the session's home for the probes to fail to
    # read; a ledger test that runs later in the same session loads that same file.
    settings.BEARPIT_HOME = tmp_path
    keystore.reset_cache()
    try:
        target = Path(str(escape_targets("order-r1", 1)["keystore"]))
        assert stat.S_IMODE(target.stat().st_mode) == 0o600
        assert keystore.decrypt(keystore.encrypt("still usable")) == "still usable"
    finally:
        keystore.reset_cache()
