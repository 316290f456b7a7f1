"""The written-out sync filter keeps exactly the events Synapse's own check keeps
(realms/herald/filtercheck.py)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from synapse.api import filtering
from synapse.api.presence import UserPresenceState
from synapse.api.room_versions import RoomVersion, RoomVersions
from synapse.events import make_event_from_dict

from realms.herald.filtercheck import SYNAPSE_CHECK, FilterCheck

pytestmark = pytest.mark.timeout(120)

ROOMS = ["!a:t.local", "!b:t.local"]
SENDERS = ["@a:t.local", "@b:t.local"]
TYPES = ["m.room.message", "m.room.member", "m.reaction", "m.room.*", "m.*", "*", "x"]
LABELS = ["l1", "l2"]
REL_TYPES = ["m.thread", "m.annotation", "m.replace"]


def _homeserver(relation_filters: bool) -> Any:
    """The two things a Synapse ``Filter`` reads from its homeserver."""
    experimental = SimpleNamespace(msc3773_enabled=False, msc3874_enabled=relation_filters)
    return SimpleNamespace(
        get_datastores=lambda: SimpleNamespace(main=None),
        config=SimpleNamespace(experimental=experimental),
    )


def _maybe(values: list[str]) -> st.SearchStrategy[list[str]]:
    return st.lists(st.sampled_from(values), max_size=3)


filters = st.fixed_dictionaries(
    {},
    optional={
        "types": _maybe(TYPES),
        "not_types": _maybe(TYPES),
        "rooms": _maybe(ROOMS),
        "not_rooms": _maybe(ROOMS),
        "senders": _maybe(SENDERS),
        "not_senders": _maybe(SENDERS),
        "contains_url": st.booleans(),
        "org.matrix.labels": _maybe(LABELS),
        "org.matrix.not_labels": _maybe(LABELS),
        "org.matrix.msc3874.rel_types": _maybe(REL_TYPES),
        "org.matrix.msc3874.not_rel_types": _maybe(REL_TYPES),
    },
)

relations = st.one_of(
    st.none(),
    st.just("not a mapping"),
    st.fixed_dictionaries(
        {},
        optional={
            "rel_type": st.one_of(st.sampled_from(REL_TYPES), st.integers()),
            "event_id": st.one_of(st.just("$parent"), st.integers()),
            "key": st.one_of(st.just("👍"), st.integers()),
        },
    ),
)

contents = st.fixed_dictionaries(
    {},
    optional={
        "body": st.just("hello"),
        "url": st.one_of(st.just("mxc://t.local/x"), st.integers()),
        "org.matrix.labels": _maybe(LABELS),
        "user_id": st.sampled_from(SENDERS),
        "m.relates_to": relations,
    },
)

fields = st.fixed_dictionaries(
    {},
    optional={
        "room_id": st.sampled_from(ROOMS),
        "sender": st.one_of(st.sampled_from(SENDERS), st.just("")),
        "type": st.sampled_from(
            ["m.room.message", "m.room.member", "m.room.create", "m.reaction", "y"]
        ),
        "content": st.one_of(contents, st.just(["not", "a", "mapping"]), st.none()),
    },
)


def _as_event(raw: dict[str, Any], version: RoomVersion = RoomVersions.V10) -> Any:
    """A real Synapse event with the same fields (an event always has its type, sender and
    content, and its room id unless it creates a room whose version derives the id)."""
    content = raw.get("content")
    event_type = raw.get("type", "m.room.message")
    fields = {
        "type": event_type,
        "room_id": raw.get("room_id", ROOMS[0]),
        "sender": raw.get("sender") or SENDERS[0],
        "content": content if isinstance(content, dict) else {},
        "auth_events": [],
        "prev_events": [],
        "depth": 1,
        "origin_server_ts": 0,
        "hashes": {"sha256": "x"},
        "signatures": {},
    }
    if event_type == "m.room.create":
        fields["state_key"] = ""
        if version.msc4291_room_ids_as_hashes:
            del fields["room_id"]
    return make_event_from_dict(fields, version)


@settings(max_examples=1500, deadline=None)
@given(
    filter_json=filters,
    raw=fields,
    relation_filters=st.booleans(),
    version=st.sampled_from([None, RoomVersions.V10, RoomVersions.V11, RoomVersions.V12]),
)
def test_an_event_is_kept_exactly_when_synapse_keeps_it(
    filter_json: dict[str, Any],
    raw: dict[str, Any],
    relation_filters: bool,
    version: RoomVersion | None,
) -> None:
    FilterCheck.parse_config({})
    synapse_check = getattr(filtering.Filter, SYNAPSE_CHECK)
    sync_filter = filtering.Filter(_homeserver(relation_filters), filter_json)
    # None: a plain mapping, as account data and ephemeral events reach a filter.
    event = raw if version is None else _as_event(raw, version)
    assert sync_filter._check(event) == synapse_check(sync_filter, event)


def test_the_runtime_filter_keeps_messages_and_drops_the_rest() -> None:
    FilterCheck.parse_config({})
    timeline = filtering.Filter(_homeserver(False), {"types": ["m.room.message"], "limit": 100})
    message = _as_event({"type": "m.room.message", "content": {"body": "hi"}})
    member = _as_event({"type": "m.room.member", "content": {"membership": "join"}})
    assert timeline._check(message) is True
    assert timeline._check(member) is False


def test_a_room_version_12_create_event_is_judged_by_the_room_id_it_carries() -> None:
    # The event has no room id of its own; its room's id is derived from it.
    create = _as_event({"type": "m.room.create", "content": {}}, RoomVersions.V12)
    FilterCheck.parse_config({})
    synapse_check = getattr(filtering.Filter, SYNAPSE_CHECK)
    for filter_json in ({"rooms": [create.room_id]}, {"not_rooms": [create.room_id]}):
        sync_filter = filtering.Filter(_homeserver(False), filter_json)
        assert sync_filter._check(create) == synapse_check(sync_filter, create)
    assert filtering.Filter(_homeserver(False), {"rooms": [create.room_id]})._check(create) is False


def test_presence_takes_synapses_own_path() -> None:
    FilterCheck.parse_config({})
    presence = filtering.Filter(_homeserver(False), {"senders": [SENDERS[0]]})
    assert presence._check(UserPresenceState.default(SENDERS[0])) is True
    assert presence._check(UserPresenceState.default(SENDERS[1])) is False


def test_applying_twice_replaces_once() -> None:
    FilterCheck.parse_config({})
    installed = filtering.Filter._check
    synapse_check = getattr(filtering.Filter, SYNAPSE_CHECK)
    FilterCheck.parse_config({})
    assert filtering.Filter._check is installed
    assert getattr(filtering.Filter, SYNAPSE_CHECK) is synapse_check
    assert synapse_check is not installed
