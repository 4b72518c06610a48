"""A small JSON Schema checker for the OpenAPI document's schemas: the keywords the document
uses, no more (:data:`KEYWORDS`; a schema with any other keyword is an error, so that a
check never passes by ignoring one)."""

from __future__ import annotations

import re
from typing import Any

KEYWORDS = frozenset(
    {
        "$ref",
        "type",
        "enum",
        "const",
        "oneOf",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "format",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "maxLength",
        "default",
        "description",
    }
)
_DATE_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$")
_TYPES: dict[str, Any] = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
}


def _same(a: Any, b: Any) -> bool:
    """Equal and of one type: True is not 1."""
    return type(a) is type(b) and a == b


def resolve(document: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        ref = schema["$ref"]
        assert ref.startswith("#/"), ref
        found: Any = document
        for part in ref[2:].split("/"):
            found = found[part]
        schema = found
    return schema


def problems(
    document: dict[str, Any], schema: dict[str, Any], value: Any, at: str = "$"
) -> list[str]:
    """Each way ``value`` fails ``schema`` (empty: it passes)."""
    schema = resolve(document, schema)
    unknown = set(schema) - KEYWORDS
    assert not unknown, f"{at}: the checker does not know {sorted(unknown)}"
    found: list[str] = []
    if "oneOf" in schema:
        passing = [s for s in schema["oneOf"] if not problems(document, s, value, at)]
        if len(passing) != 1:
            found.append(f"{at}: matches {len(passing)} of oneOf, not 1")
    if "const" in schema and not _same(value, schema["const"]):
        found.append(f"{at}: {value!r} is not {schema['const']!r}")
    if "enum" in schema and not any(_same(value, e) for e in schema["enum"]):
        found.append(f"{at}: {value!r} is not one of {schema['enum']}")
    if "type" in schema:
        kinds = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(_TYPES[k](value) for k in kinds):
            found.append(f"{at}: {value!r} is not of type {schema['type']}")
            return found
    is_date = schema.get("format") == "date-time" and isinstance(value, str)
    if is_date and not _DATE_TIME.match(value):
        found.append(f"{at}: {value!r} is no date-time")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            found.append(f"{at}: {value} < {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            found.append(f"{at}: {value} > {schema['maximum']}")
        if "exclusiveMinimum" in schema and value <= schema["exclusiveMinimum"]:
            found.append(f"{at}: {value} <= {schema['exclusiveMinimum']}")
    if isinstance(value, str) and "maxLength" in schema and len(value) > schema["maxLength"]:
        found.append(f"{at}: longer than {schema['maxLength']}")
    if isinstance(value, dict):
        properties = schema.get("properties", {})
        for name in schema.get("required", []):
            if name not in value:
                found.append(f"{at}: {name} is missing")
        extra = schema.get("additionalProperties", True)
        for name, item in value.items():
            if name in properties:
                found += problems(document, properties[name], item, f"{at}.{name}")
            elif extra is False:
                found.append(f"{at}: {name} is not described")
            elif isinstance(extra, dict):
                found += problems(document, extra, item, f"{at}.{name}")
    if isinstance(value, list) and "items" in schema:
        for n, item in enumerate(value):
            found += problems(document, schema["items"], item, f"{at}[{n}]")
    return found


def schemas_in(node: Any) -> list[dict[str, Any]]:
    """Every schema object in an OpenAPI document (under a ``schema`` key or in
    ``components.schemas``, and every schema inside those)."""
    found: list[dict[str, Any]] = []

    def walk_schema(schema: Any) -> None:
        if not isinstance(schema, dict):
            return
        found.append(schema)
        for key in ("items", "additionalProperties"):
            walk_schema(schema.get(key))
        for sub in schema.get("properties", {}).values():
            walk_schema(sub)
        for sub in schema.get("oneOf", []):
            walk_schema(sub)

    def walk(item: Any) -> None:
        if isinstance(item, dict):
            for key, sub in item.items():
                if key == "schema":
                    walk_schema(sub)
                else:
                    walk(sub)
        elif isinstance(item, list):
            for sub in item:
                walk(sub)

    walk(node)
    for schema in node.get("components", {}).get("schemas", {}).values():
        walk_schema(schema)
    return found
