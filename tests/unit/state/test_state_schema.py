"""The text a snapshot records of a state's declared type: every type round-trips, odd field
names are quoted, a map state records both halves, and a malformed text is refused."""

from __future__ import annotations

import pytest

from barrierflow.common import Types
from barrierflow.datastream.state import (
    ListStateDescriptor,
    MapStateDescriptor,
    ValueStateDescriptor,
)
from barrierflow.state.descriptors import StateKind
from barrierflow.state.state_schema import declared_text, parse_type, state_type_info, type_text

NESTED = Types.ROW_NAMED(
    ["id", "odd name", "tags", "scores", "pair"],
    [
        Types.LONG(),
        Types.STRING(),
        Types.LIST(Types.STRING()),
        Types.MAP(Types.STRING(), Types.DOUBLE()),
        Types.TUPLE([Types.INT(), Types.ROW([Types.BOOLEAN()])]),
    ],
)


@pytest.mark.parametrize(
    "type_info",
    [Types.LONG(), Types.PICKLED_BYTE_ARRAY(), Types.LIST(Types.INT()), NESTED,
     Types.ROW_NAMED(['with "quotes", commas: and <angles>'], [Types.INT()])],
)  # fmt: skip
def test_every_type_reads_back_as_it_was_written(type_info):
    assert parse_type(type_text(type_info)) == type_info


def test_the_text_is_pyflinks_names_with_odd_field_names_quoted():
    assert type_text(NESTED) == (
        'ROW_NAMED<id:LONG,"odd name":STRING,tags:LIST<STRING>,scores:MAP<STRING,DOUBLE>,'
        "pair:TUPLE<INT,ROW<BOOLEAN>>>"
    )


def test_a_state_records_its_declared_type_and_a_map_state_both_halves():
    assert declared_text(ValueStateDescriptor("v")) is None
    assert declared_text(ListStateDescriptor("l", Types.INT())) == "INT"
    assert declared_text(MapStateDescriptor("m", None, Types.LONG())) == "MAP<ANY,LONG>"
    assert declared_text(MapStateDescriptor("m")) is None
    assert state_type_info(StateKind.MAP, "MAP<ANY,LONG>") == (None, Types.LONG())
    assert state_type_info(StateKind.VALUE, None) is None


@pytest.mark.parametrize("text", ["", "LONG<", "ROW_NAMED<a LONG>", "LIST<INT", "long", "INT,"])
def test_a_malformed_text_is_refused_naming_where(text):
    with pytest.raises(ValueError, match="declared type"):
        parse_type(text)
