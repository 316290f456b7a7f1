"""Finding the line of a located problem in the file's text."""

from __future__ import annotations

from realms.library.validation import find_line

JSON = """{
  "id": "pong",
  "model": {"provider": "p", "on_exhausted": "x"},
  "budget": {
    "max_usd": 1,
    "on_exhausted": "explode"
  }
}
"""

YAML = """id: pong
skills:
  - source: builtin
    ref: competitor
budget:
  max_usd: 1
  on_exhausted: explode
"""


def test_a_nested_json_key_is_found_under_its_parent():
    # "on_exhausted" first appears under "model"; the path's parent picks the right one.
    assert find_line(JSON, "budget.on_exhausted") == 6
    assert find_line(JSON, "budget") == 4
    assert find_line(JSON, "id") == 2


def test_yaml_keys_and_list_items():
    assert find_line(YAML, "budget.on_exhausted") == 7
    assert find_line(YAML, "skills[0].ref") == 4
    assert find_line(YAML, "skills[0].source") == 3


def test_an_absent_key_gives_the_deepest_line_found_or_none():
    assert find_line(JSON, "budget.grace_period") == 4
    assert find_line(JSON, "colour") is None
    assert find_line("not json at all", "id") is None
