"""Tests that share a session's state leave it usable whatever runs after them."""

from __future__ import annotations

from ledger import keystore
from tests.realms.forge.conftest import escape_targets, planted_secret


def test_the_escape_probes_never_touch_the_keystore_the_ledger_loads(settings, tmp_path):
    # The forge tests plant a secret for the probes to fail to read; it lives in a place
    # of their own, so a ledger test that runs later in the same session finds the home's
    # keystore as it was.
    settings.BEARPIT_HOME = tmp_path
    keystore.reset_cache()
    try:
        needle, secret_file = planted_secret()
        escape_targets("order-r1", 1, needle, secret_file, [])
        assert not (tmp_path / "keystore.key").exists()
        assert secret_file.parent.parent == tmp_path / "forge-tests"
        assert keystore.decrypt(keystore.encrypt("still usable")) == "still usable"
    finally:
        keystore.reset_cache()
