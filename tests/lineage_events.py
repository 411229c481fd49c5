"""Reading OpenLineage events back in tests: every event JSON is structured into the
``openlineage-python`` client's typed classes (facets chosen by their ``_schemaURL``), must
serialize back to the same JSON, and windowlib's own facets are validated against the JSON
Schemas in ``docs/lineage/`` (the OpenLineage base schema, not shipped in the wheel, is stood in
for by its ``BaseFacet`` requirements)."""

from __future__ import annotations

import functools
import importlib
import json
import pkgutil
import sys
import types
import typing
from enum import Enum
from pathlib import Path
from typing import Any

import attr

SCHEMAS = Path(__file__).resolve().parents[1] / "docs" / "lineage"


@functools.cache
def facet_classes() -> dict[str, type]:
    """Every facet class the events may hold, by its schema URL."""
    from openlineage.client import generated
    from openlineage.client.generated.base import BaseFacet

    from windowlib.runs.lineage import windowlib_facets

    modules = [importlib.import_module(f"openlineage.client.generated.{m.name}")
               for m in pkgutil.iter_modules(generated.__path__)]
    if "airflow" in sys.modules:     # the provider's own facets (Airflow tests only)
        modules.append(importlib.import_module("airflow.providers.openlineage.plugins.facets"))
    found: dict[str, type] = {}
    for module in modules:
        for obj in vars(module).values():
            if isinstance(obj, type) and issubclass(obj, BaseFacet) and attr.has(obj) \
                    and obj.__module__ == module.__name__:
                found[obj._get_schema()] = obj
    for cls in windowlib_facets().values():
        found[cls._get_schema()] = cls
    return found


def _convert(kind: Any, value: Any) -> Any:
    if value is None:
        return None
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin in (typing.Union, types.UnionType):
        options = [a for a in args if a is not type(None)]
        structured = [a for a in options if isinstance(a, type) and attr.has(a)]
        return _convert(structured[0] if structured and isinstance(value, dict)
                        else options[0], value)
    if origin is list:
        return [_convert(args[0], v) for v in value]
    if origin is dict:
        return {k: _convert(args[1], v) for k, v in value.items()}
    if isinstance(kind, type) and issubclass(kind, Enum):
        return kind(value)
    if isinstance(kind, type) and attr.has(kind):
        return structure(kind, value)
    return value


def structure(cls: type, data: dict[str, Any]) -> Any:
    """``data`` as an instance of ``cls`` (a facet: the class its ``_schemaURL`` names)."""
    from openlineage.client.generated.base import BaseFacet

    if issubclass(cls, BaseFacet):
        url = data.get("_schemaURL")
        assert url, f"a facet without _schemaURL: {data}"
        assert url in facet_classes(), f"no client class for facet schema {url}"
        cls = facet_classes()[url]
    attr.resolve_types(cls)
    kwargs, known = {}, set()
    for a in attr.fields(cls):
        known.add(a.name)
        if a.init and a.name in data:
            kwargs[a.alias] = _convert(a.type, data[a.name])
        elif a.init and a.default is attr.NOTHING:   # the serializer drops empty collections
            kwargs[a.alias] = {list: [], dict: {}}[typing.get_origin(a.type)]
    extra = {k: v for k, v in data.items() if k not in known}
    assert not extra or not cls.__module__.startswith("windowlib"), (cls, extra)
    obj = cls(**kwargs)
    return obj.with_additional_properties(**extra) if extra else obj


def parse_event(data: dict[str, Any]) -> Any:
    """A ``RunEvent`` from its JSON; it must serialize back to the same JSON."""
    from openlineage.client.event_v2 import RunEvent
    from openlineage.client.serde import Serde

    event = structure(RunEvent, data)
    assert _pruned(json.loads(Serde.to_json(event))) == _pruned(data)
    return event


def _pruned(value: Any) -> Any:
    """``value`` without ``None`` and empty collections (serializers differ on those)."""
    if isinstance(value, dict):
        out = {k: _pruned(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if v not in (None, {}, [])}
    if isinstance(value, list):
        return [_pruned(v) for v in value]
    return value


def _facets(data: dict[str, Any]) -> list[dict[str, Any]]:
    found = [*data["run"].get("facets", {}).values(), *data["job"].get("facets", {}).values()]
    for ds in [*data.get("inputs", []), *data.get("outputs", [])]:
        for key in ("facets", "inputFacets", "outputFacets"):
            found += list((ds.get(key) or {}).values())
    return found


def check_windowlib_facets(data: dict[str, Any]) -> int:
    """Validate every windowlib facet of an event against ``docs/lineage/<Facet>.json``;
    returns how many were checked (every facet must name a schema URL)."""
    import jsonschema
    from referencing import Registry, Resource
    from referencing.jsonschema import DRAFT202012

    from windowlib.runs.lineage import SCHEMA_BASE

    base = {"type": "object", "required": ["_producer", "_schemaURL"],
            "properties": {"_producer": {"type": "string", "format": "uri"},
                           "_schemaURL": {"type": "string", "format": "uri"}}}
    openlineage = {"$id": "https://openlineage.io/spec/2-0-2/OpenLineage.json",
                   "$defs": {k: base for k in ("RunFacet", "InputDatasetFacet")}}
    resources = [("https://openlineage.io/spec/2-0-2/OpenLineage.json", openlineage)]
    for path in SCHEMAS.glob("*.json"):
        doc = json.loads(path.read_text())
        assert doc["$id"] == f"{SCHEMA_BASE}{path.name}"
        resources.append((doc["$id"], doc))
    registry = Registry().with_resources(
        (uri, Resource.from_contents(doc, default_specification=DRAFT202012))
        for uri, doc in resources)
    checked = 0
    for facet in _facets(data):
        url = facet.get("_schemaURL")
        assert url, f"a facet without _schemaURL: {facet}"
        if not url.startswith(SCHEMA_BASE):
            continue
        doc_uri, _, pointer = url.partition("#")
        validator = jsonschema.Draft202012Validator({"$ref": url}, registry=registry)
        validator.validate(facet)
        assert pointer.startswith("/$defs/") and doc_uri.endswith(".json")
        checked += 1
    return checked

