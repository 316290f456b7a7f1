"""runtime.schema gives exactly what jsonschema's Draft 2020-12 validator gives, or steps aside."""

from __future__ import annotations

import itertools

import pytest
from jsonschema import Draft202012Validator

from runtime.schema import errors
from runtime.tools import schema_errors

SCHEMAS = [
    {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n", "m"]},
    {
        "type": "object",
        "properties": {
            "text": {"type": "string", "minLength": 1, "maxLength": 5, "pattern": "^[a-z]+$"},
            "times": {"type": "integer", "minimum": 1, "maximum": 3},
            "ratio": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
            "mode": {"enum": ["a", "b", 1]},
            "flag": {"const": True},
            "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 2},
            "any": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
            "both": {"allOf": [{"minimum": 2}, {"maximum": 4}]},
            "kinds": {"type": ["string", "integer"], "title": "Kinds", "format": "email"},
            "nested": {
                "type": "object",
                "properties": {"deep": {"type": "boolean"}},
                "additionalProperties": {"type": "integer"},
            },
        },
        "required": ["text"],
        "additionalProperties": False,
    },
    {"type": "array", "items": False, "maxLength": 0},
    {"properties": {"e": {"maxLength": 0, "minItems": 2}}, "additionalProperties": True},
    True,
    False,
]

VALUES = [
    None, True, False, 0, 1, 1.0, 2.5, 3, 7, -1, "", "abc", "ABC", "toolong", "b",
    [], ["x"], ["x", "y", "z"], [1], {}, {"deep": 1}, {"deep": True, "k": "v"}, {"k": 2},
]  # fmt: skip


def _theirs(schema, instance):
    return [(tuple(e.path), e.message) for e in Draft202012Validator(schema).iter_errors(instance)]


def _arguments():
    yield {}
    for key in ("n", "m", "text", "times", "ratio", "mode", "flag", "tags", "any", "both",
                "kinds", "nested", "e", "zz"):  # fmt: skip
        for value in VALUES:
            yield {key: value}
    for a, b in itertools.combinations(VALUES[:12], 2):
        yield {"text": a, "times": b, "extra": a, "other": b}


@pytest.mark.parametrize("schema", SCHEMAS, ids=range(len(SCHEMAS)))
def test_every_violation_and_message_is_jsonschemas(schema):
    for arguments in [*_arguments(), *VALUES]:
        assert errors(schema, arguments) == _theirs(schema, arguments), arguments


@pytest.mark.parametrize(
    "schema",
    [
        {"$ref": "#/$defs/x", "$defs": {"x": {"type": "string"}}},
        {"patternProperties": {"^a": {"type": "string"}}, "additionalProperties": False},
        {"type": "object", "properties": {"a": {"if": {"type": "string"}}}},
        {"type": "array", "items": {"type": "string"}, "prefixItems": [{"type": "integer"}]},
        {"type": "object", "required": "a"},
        {"minimum": "1"},
        {"type": "objects"},
    ],
)
def test_a_schema_beyond_the_subset_is_left_to_jsonschema(schema):
    assert errors(schema, {"a": 1}) is None


def test_tool_arguments_are_checked_as_strictly_either_way():
    refs = {
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/word"}},
        "$defs": {"word": {"type": "string"}},
        "required": ["a"],
    }
    assert schema_errors(refs, {"a": 3}) == ["a: 3 is not of type 'string'"]
    plain = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a", "b"]}
    assert schema_errors(plain, {"a": 3}) == [
        "(arguments): 'b' is a required property",
        "a: 3 is not of type 'string'",
    ]
