"""web_fetch's address policy with addresses the operator named as reachable."""

from __future__ import annotations

import ipaddress

from realms.realmtools import webfetch


def test_named_addresses_are_reachable_and_nothing_else_private_is() -> None:
    policy = webfetch.policy_allowing(["127.0.0.1"])
    assert policy(ipaddress.ip_address("127.0.0.1"))
    assert policy(ipaddress.ip_address("93.184.216.34"))
    for other in ("127.0.0.2", "10.0.0.1", "::1", "169.254.169.254", "::ffff:127.0.0.1"):
        assert not policy(ipaddress.ip_address(other)), other
    assert webfetch.policy_allowing([]) is webfetch.is_public_address
