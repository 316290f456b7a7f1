"""Small machines written for these tests."""

from __future__ import annotations

from typing import Any

AUCTION: dict[str, Any] = {
    "roles": {
        "host": {"members": "referee"},
        "bidder": {"members": "participants"},
        "spy": {"members": ["zed"], "visibility": "hidden"},
    },
    "states": ["open", "bidding", "closed", "done"],
    "initial": "open",
    "terminal": ["done"],
    "actor": {"over": "bidder", "skip": ["passed"]},
    "referee_reads_commons": True,
    "data": {
        "lot": {"visibility": "public"},
        "reserve": {"visibility": "referee"},
        "hand": {"visibility": "owner"},
        "passed": {"visibility": "public", "type": "set"},
        "bids_in": {"visibility": "public", "type": "set"},
    },
    "transitions": {
        "start": {
            "from": "open",
            "to": "bidding",
            "by": "host",
            "guard": [{"data_present": "lot"}],
            "effects": [{"reset": "passed"}, {"set_actor": "$args.first"}],
        },
        "bid": {
            "from": "bidding",
            "to": "same",
            "by": "bidder",
            "guard": ["caller_is_actor"],
            "effects": [{"add_to": {"key": "bids_in", "value": "$caller"}}, "advance_actor"],
        },
        "pass": {
            "from": "bidding",
            "to": "same",
            "by": "bidder",
            "guard": ["caller_is_actor", {"caller_not_in": "passed"}],
            "effects": [{"add_to": {"key": "passed", "value": "$caller"}}, "advance_actor"],
        },
        "show": {
            "from": ["bidding", "closed"],
            "to": "same",
            "by": "bidder",
            "effects": [{"reveal": {"key": "hand", "owners": "$caller"}}],
        },
        "peek": {"from": "any", "to": "same", "by": "spy", "log": "referee"},
        "close": {
            "from": "bidding",
            "to": "closed",
            "by": "host",
            "guard": [{"members_count": {"over": "bidder", "minus": ["passed"], "at_most": 1}}],
            "effects": [
                {"reveal": {"key": "hand", "owners": {"over": "bidder", "minus": ["passed"]}}},
                {"set_actor": None},
            ],
        },
        "finish": {"from": "closed", "to": "done", "by": "host"},
    },
    "wake": [
        {"role": "actor"},
        {
            "role": "host",
            "when": [{"members_count": {"over": "bidder", "minus": ["passed"], "at_most": 1}}],
        },
        {"role": "host", "after_s": 240},
    ],
}

# A participant using ``set``: the loader refuses it, so no launched realm has it; the
# engine's own refusal is tested on this copy.
AUCTION_WITH_CHEAT: dict[str, Any] = {
    **AUCTION,
    "transitions": {
        **AUCTION["transitions"],
        "cheat": {
            "from": "bidding",
            "to": "same",
            "by": "bidder",
            "effects": [{"set": {"key": "lot", "value": "free"}}],
        },
    },
}

SEALED_VOTE: dict[str, Any] = {
    "roles": {"ref": {"members": "referee"}, "voter": {"members": "participants"}},
    "states": ["voting", "counted"],
    "initial": "voting",
    "data": {"ballot": {"visibility": "public"}},
    "transitions": {
        "count": {
            "from": "voting",
            "to": "counted",
            "by": "ref",
            "guard": [{"escrow_complete": {"round": "$data.ballot", "over": "voter", "minus": []}}],
        }
    },
}
