"""The declared types of keyed state, as the text a snapshot records beside the state: what a
restore compares with the types the job now declares (``schema_evolution.py``), and what the
state processor turns into Spark schemas.

The text is PyFlink's type names, with composite types' parts in angle brackets::

    LONG    STRING    LIST<INT>    MAP<STRING,DOUBLE>    TUPLE<INT,STRING>    ROW<INT,LONG>
    ROW_NAMED<id:LONG,name:STRING,"odd name":INT>

A field name that is not an identifier is written as a JSON string. ``ANY`` stands for no
declared type: a map state may declare its value type and not its key type. A map state's
text is ``MAP<key,value>``, a list state's the type of its elements. It is parsed into
``TypeInformation`` only: nothing is looked up or run from it. Performs no I/O.
"""

from __future__ import annotations

import json
import re
from typing import Any

from barrierflow.common.typeinfo import TypeInformation
from barrierflow.state.descriptors import StateDescriptor, StateKind

ANY = "ANY"
_NAME = re.compile(r"[A-Z_]+")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_MAX_TEXT = 100_000  # characters: a longer text is refused as corrupt


def type_text(type_info: TypeInformation | None) -> str:
    """The text of ``type_info``; ``ANY`` for None."""
    if type_info is None:
        return ANY
    if not type_info.fields:
        return type_info.name
    if type_info.field_names is not None:
        parts = [
            f"{_field_name(n)}:{type_text(t)}"
            for n, t in zip(type_info.field_names, type_info.fields, strict=True)
        ]
    else:
        parts = [type_text(t) for t in type_info.fields]
    return f"{type_info.name}<{','.join(parts)}>"


def _field_name(name: str) -> str:
    return name if _IDENTIFIER.fullmatch(name) else json.dumps(name)


def parse_type(text: str) -> TypeInformation | None:
    """The type of ``text`` (None for ``ANY``); ValueError naming the place where it is
    malformed."""
    if len(text) > _MAX_TEXT:
        raise ValueError(f"a declared type of {len(text)} characters is too long")
    parsed, end = _parse(text, 0)
    if end != len(text):
        raise ValueError(f"declared type {text!r:.200} has trailing characters at {end}")
    return parsed


def _parse(text: str, at: int) -> tuple[TypeInformation | None, int]:
    match = _NAME.match(text, at)
    if match is None:
        raise ValueError(f"declared type {text!r:.200} is malformed at {at}")
    name, at = match.group(), match.end()
    if name == ANY:
        return None, at
    if text[at : at + 1] != "<":
        return TypeInformation(name), at
    fields: list[TypeInformation | None] = []
    names: list[str] = []
    at += 1
    while True:
        if name == "ROW_NAMED":
            field, at = _parse_field_name(text, at)
            names.append(field)
        item, at = _parse(text, at)
        fields.append(item)
        if text[at : at + 1] == ">":
            break
        if text[at : at + 1] != ",":
            raise ValueError(f"declared type {text!r:.200} is malformed at {at}")
        at += 1
    return TypeInformation(name, tuple(fields), tuple(names) if names else None), at + 1


def _parse_field_name(text: str, at: int) -> tuple[str, int]:
    if text[at : at + 1] == '"':
        decoder = json.JSONDecoder()
        try:
            name, end = decoder.raw_decode(text, at)
        except json.JSONDecodeError as e:
            raise ValueError(f"declared type {text!r:.200}: bad field name at {at}") from e
    else:
        match = _IDENTIFIER.match(text, at)
        if match is None:
            raise ValueError(f"declared type {text!r:.200}: bad field name at {at}")
        name, end = match.group(), match.end()
    if text[end : end + 1] != ":":
        raise ValueError(f"declared type {text!r:.200} is malformed at {end}")
    return name, end + 1


def declared_text(descriptor: StateDescriptor) -> str | None:
    """What a snapshot records for ``descriptor``'s state; None when it declares no type."""
    if descriptor.kind is StateKind.MAP:
        key, value = descriptor.type_info or (None, None)
        if key is None and value is None:
            return None
        return f"MAP<{type_text(key)},{type_text(value)}>"
    return None if descriptor.type_info is None else type_text(descriptor.type_info)


def state_type_info(kind: StateKind, text: str | None) -> Any:
    """The ``type_info`` a descriptor of ``kind`` would carry for the recorded ``text``: a
    (key, value) pair for a map state."""
    if kind is StateKind.MAP:
        if text is None:
            return (None, None)
        parsed = parse_type(text)
        if parsed is None or parsed.name != "MAP" or len(parsed.fields) != 2:
            raise ValueError(f"a map state records MAP<key,value>, not {text!r:.200}")
        return parsed.fields
    return None if text is None else parse_type(text)
