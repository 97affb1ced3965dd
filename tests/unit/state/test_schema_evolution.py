"""Schema evolution rules (Flink's POJO rules, Spark transformWithState's Avro rules): what a
restored typed state may become, how each stored value migrates, and what is refused, naming
the state and the field."""

from __future__ import annotations

import pytest

from barrierflow.common import Types
from barrierflow.common.types import Row
from barrierflow.datastream.state import (
    ListStateDescriptor,
    MapStateDescriptor,
    ValueStateDescriptor,
)
from barrierflow.state.descriptors import StateKind
from barrierflow.state.schema_evolution import (
    Compatibility,
    IncompatibleStateError,
    StateSchemas,
    compare,
    migrate_stored,
)
from barrierflow.state.state_schema import type_text
from barrierflow.state.ttl_state import TtlValue

V1 = Types.ROW_NAMED(["id", "name", "score"], [Types.INT(), Types.STRING(), Types.FLOAT()])


def row(names, *values):
    r = Row(*values)
    r.set_field_names(names)
    return r


def change(new_type, old_type=V1, kind=StateKind.VALUE, descriptor=ValueStateDescriptor):
    return compare("s", kind, type_text(old_type), descriptor("s", new_type))


def test_the_same_type_or_no_type_on_either_side_is_unchanged():
    assert change(V1).compatibility is Compatibility.UNCHANGED
    assert change(None).compatibility is Compatibility.UNCHANGED  # an untyped declaration
    untyped = compare("s", StateKind.VALUE, None, ValueStateDescriptor("s", V1))
    assert untyped.compatibility is Compatibility.UNCHANGED


@pytest.mark.parametrize(
    ("names", "types", "described", "migrated"),
    [
        (  # add a field: its default, else None
            ["id", "name", "score", "country", "zip"],
            [Types.INT(), Types.STRING(), Types.FLOAT(), Types.STRING(), Types.STRING()],
            ["field 'country' added (default 'unknown')", "field 'zip' added (default None)"],
            (7, "a", 1.5, "unknown", None),
        ),
        (  # remove a field
            ["id", "score"],
            [Types.INT(), Types.FLOAT()],
            ["field 'name' removed"],
            (7, 1.5),
        ),
        (  # reorder fields
            ["score", "id", "name"],
            [Types.FLOAT(), Types.INT(), Types.STRING()],
            ["fields of the value reordered"],
            (1.5, 7, "a"),
        ),
        (  # widen numbers
            ["id", "name", "score"],
            [Types.LONG(), Types.STRING(), Types.DOUBLE()],
            ["field 'id' widens from INT to LONG", "field 'score' widens from FLOAT to DOUBLE"],
            (7, "a", 1.5),
        ),
    ],
    ids=["add", "remove", "reorder", "widen"],
)
def test_each_allowed_change_migrates_rows_stored_as_rows_tuples_or_dicts(
    names, types, described, migrated
):
    descriptor = ValueStateDescriptor("s", Types.ROW_NAMED(names, types))
    descriptor.set_field_defaults({"country": "unknown"})
    found = compare("s", StateKind.VALUE, type_text(V1), descriptor)
    assert found.compatibility is Compatibility.MIGRATE
    assert list(found.changes) == described
    assert found.describe().startswith("will migrate: ")
    for stored in (row(["id", "name", "score"], 7, "a", 1.5), (7, "a", 1.5),
                   {"id": 7, "name": "a", "score": 1.5}):  # fmt: skip
        out = found.convert(stored)
        assert tuple(out) == migrated and out.get_field_names() == names


def test_a_list_or_map_of_rows_and_nested_rows_evolve_alike():
    v2 = Types.ROW_NAMED(["name", "id", "new"], [Types.STRING(), Types.LONG(), Types.INT()])
    as_list = compare("s", StateKind.LIST, type_text(V1), ListStateDescriptor("s", v2))
    assert as_list.compatibility is Compatibility.MIGRATE
    assert [tuple(r) for r in migrate_stored(StateKind.LIST, [(1, "a", 0.5)], as_list.convert)] == [
        ("a", 1, None)
    ]
    as_map = compare(
        "s", StateKind.MAP, f"MAP<STRING,{type_text(V1)}>",
        MapStateDescriptor("s", Types.STRING(), v2),
    )  # fmt: skip
    assert tuple(migrate_stored(StateKind.MAP, {"k": (1, "a", 0.5)}, as_map.convert)["k"]) == (
        "a", 1, None,
    )  # fmt: skip
    outer = Types.ROW_NAMED(["user", "visits"], [V1, Types.LIST(V1)])
    outer2 = Types.ROW_NAMED(["user", "visits"], [v2, Types.LIST(v2)])
    nested = change(outer2, outer)
    assert "field 'user.new' added (default None)" in nested.changes
    assert "field 'visits[].new' added (default None)" in nested.changes
    out = nested.convert(((1, "a", 0.5), [(2, "b", 1.0)]))
    assert tuple(out[0]) == ("a", 1, None) and [tuple(v) for v in out[1]] == [("b", 2, None)]


def test_time_to_live_stamps_are_kept_around_migrated_values():
    v2 = Types.ROW_NAMED(["id"], [Types.INT()])
    found = change(v2)
    migrated = migrate_stored(StateKind.VALUE, TtlValue((7, "a", 1.5), 123), found.convert)
    assert (
        type(migrated) is TtlValue and migrated.written_ms == 123 and tuple(migrated.value) == (7,)
    )


@pytest.mark.parametrize(
    ("new_type", "reason"),
    [
        (
            Types.ROW_NAMED(["id", "title", "score"], [Types.INT(), Types.STRING(), Types.FLOAT()]),
            "field 'name' is gone and field 'title' of the same type took its place, which "
            "reads as a rename",
        ),
        (
            Types.ROW_NAMED(
                ["id", "name", "score"], [Types.SHORT(), Types.STRING(), Types.FLOAT()]
            ),
            "field 'id' narrows from INT to SHORT",
        ),
        (
            Types.ROW_NAMED(["id", "name", "score"], [Types.INT(), Types.INT(), Types.FLOAT()]),
            "field 'name' changes from STRING to INT",
        ),
        (Types.LONG(), "the value changes from ROW_NAMED<"),
    ],
    ids=["rename", "narrow", "retype", "not-a-row"],
)
def test_each_refused_change_names_the_state_and_the_field(new_type, reason):
    found = change(new_type)
    assert found.compatibility is Compatibility.INCOMPATIBLE
    assert reason in found.reason
    message = str(IncompatibleStateError(found, "operator 'count' (Count), subtask 0"))
    assert message.startswith("operator 'count' (Count), subtask 0: state 's' cannot be restored")
    assert reason in message and "--dry-run" in message


def test_a_changed_kind_or_map_key_is_refused():
    kind = compare("s", StateKind.VALUE, "LONG", ListStateDescriptor("s", Types.LONG()))
    assert "value state and is now declared as list state" in kind.reason
    keys = compare(
        "s", StateKind.MAP, "MAP<INT,LONG>", MapStateDescriptor("s", Types.STRING(), Types.LONG())
    )
    assert keys.compatibility is Compatibility.INCOMPATIBLE
    assert "the type of the map's keys changes from INT to STRING" in keys.reason
    widened = compare(
        "s", StateKind.MAP, "MAP<INT,LONG>", MapStateDescriptor("s", Types.LONG(), Types.LONG())
    )
    assert widened.compatibility is Compatibility.MIGRATE and widened.convert is None


def test_a_default_that_is_not_of_its_fields_type_is_refused():
    v2 = ValueStateDescriptor(
        "s", Types.ROW_NAMED(["id", "n"], [Types.INT(), Types.INT()])
    ).set_field_defaults({"n": "many"})
    found = compare("s", StateKind.VALUE, "ROW_NAMED<id:INT>", v2)
    assert "the default of field 'n' is not of its type" in found.reason


def test_a_backends_schemas_record_what_is_declared_and_keep_what_is_not():
    schemas = StateSchemas()
    schemas.restored({"a": "value", "b": "value"}, {"a": type_text(V1), "b": "LONG"})
    v2 = Types.ROW_NAMED(["id"], [Types.INT()])
    assert schemas.declare(ValueStateDescriptor("a", v2)).compatibility is Compatibility.MIGRATE
    assert schemas.declare(ValueStateDescriptor("new", Types.INT())).convert is None
    with pytest.raises(IncompatibleStateError, match=r"'b'.*narrows from LONG to INT"):
        schemas.declare(ValueStateDescriptor("b", Types.INT()))
    assert schemas.types() == {"a": "ROW_NAMED<id:INT>", "b": "LONG", "new": "INT"}
    with pytest.raises(ValueError, match="records state 'a' as"):
        schemas.restored({"a": "value"}, {"a": "LONG"})
