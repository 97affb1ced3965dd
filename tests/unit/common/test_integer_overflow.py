"""from_collection's values wrap into a BYTE, SHORT or INT as Java's cast makes them, as
PyFlink's do; a function's result out of range is refused, as PyFlink's serializer refuses it."""

from __future__ import annotations

import pytest

from barrierflow.common import Types
from barrierflow.datastream import StreamExecutionEnvironment
from barrierflow.declared_types.conversion import IntegerOverflow, value_converter
from barrierflow.errors import ConfigurationError


def _collected(values, type_info):
    stream = StreamExecutionEnvironment().from_collection(values, type_info=type_info)
    return stream.get_transformation().function.values


@pytest.mark.parametrize(
    ("type_info", "values", "wrapped"),
    [  # as PyFlink 2.3 printed them
        (Types.SHORT(), [32767, 32768, 40000, -32769, 70000], [32767, -32768, -25536, 32767, 4464]),
        (Types.BYTE(), [127, 128, 300, -129], [127, -128, 44, 127]),
        (Types.INT(), [2**31, 2**31 + 5], [-(2**31), -(2**31) + 5]),
    ],
)
def test_from_collection_wraps_as_java_casts(type_info, values, wrapped):
    assert _collected(values, type_info) == wrapped


def test_wrapping_reaches_into_rows_and_a_long_beyond_64_bits_is_refused():
    row = Types.ROW([Types.SHORT(), Types.STRING()])
    assert list(_collected([(40000, "a")], row)[0]) == [-25536, "a"]
    with pytest.raises(ConfigurationError, match="is not a LONG"):
        _collected([2**63], Types.LONG())


def test_a_result_out_of_range_is_refused():
    with pytest.raises(TypeError, match="is not a SHORT"):
        value_converter(Types.SHORT())(40000)
    assert value_converter(Types.SHORT(), IntegerOverflow.WRAP)(-40000) == 25536
