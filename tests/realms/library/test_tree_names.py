"""Names in a tree sent as a mapping: every unusable one is a located refusal, never a crash."""

from __future__ import annotations

import pytest

from realms.library.files import PackageTreeError, check_path, check_tree


@pytest.mark.parametrize("name", ["", "/", "//", "a/..", "../a", "c:/x", "a\\b"])
def test_an_unusable_name_is_refused_with_where_it_came_from(name):
    with pytest.raises(PackageTreeError) as caught:
        check_tree({name: b"x"}, where="files")
    assert str(caught.value).startswith("files: ")


def test_a_plain_relative_name_is_kept():
    assert check_path("agents/a/agent.json", where="files") == "agents/a/agent.json"
