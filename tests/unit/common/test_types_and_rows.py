"""Types convert values as PyFlink converts them, ``print()`` writes them as PyFlink's Java sink
does, and ``Row`` behaves as PyFlink's: what keeps a PyFlink program's output the same."""

from __future__ import annotations

import datetime
import decimal
import io
import pickle

import pytest

from barrierflow.cluster.collected_records import PrintCollector
from barrierflow.common import Row, RowKind, Types
from barrierflow.declared_types.conversion import float32, value_converter
from barrierflow.declared_types.java_strings import java_double, java_float, printer
from barrierflow.errors import ConfigurationError


def convert(type_info, value):
    c = value_converter(type_info)
    return value if c is None else c(value)


# --- Row ----------------------------------------------------------------------------------


def test_positional_row_reads_by_index_and_prints_as_pyflink():
    row = Row(1, "a", None)
    assert row[0] == 1 and row[1:] == ["a", None] and len(row) == 3 and "a" in row
    assert repr(row) == str(row) == "<Row(1, 'a', None)>"
    assert list(row) == [1, "a", None]
    with pytest.raises(TypeError, match="without field names"):
        row.as_dict()


def test_named_row_sorts_its_keyword_fields_as_pyflink_does():
    row = Row(name="Alice", age=11)
    assert repr(row) == "Row(age=11, name='Alice')"
    assert row.name == "Alice" and row["age"] == 11 and row[0] == 11
    assert row.as_dict() == {"age": 11, "name": "Alice"}
    with pytest.raises(AttributeError, match="no field 'height'"):
        _ = row.height
    with pytest.raises(KeyError):
        row["height"]
    with pytest.raises(ValueError, match="not both"):
        Row(1, name="x")


def test_row_class_makes_named_rows_in_its_order():
    person = Row("name", "age")
    alice = person("Alice", 11)
    assert repr(alice) == "Row(name='Alice', age=11)"
    assert alice.age == 11
    with pytest.raises(ValueError, match="2 fields"):
        person("a", 1, 2)


def test_row_equality_set_and_nested_as_dict():
    row = Row(key=1, value=Row(name="a", age=2))
    assert row.as_dict(recursive=True) == {"key": 1, "value": {"age": 2, "name": "a"}}
    assert Row(1, 2) == Row(1, 2) and Row(1, 2) != Row(2, 1) and Row(1, 2) != (1, 2)
    assert Row(a=1) != Row(1)  # named and positional differ, as in PyFlink
    row[0] = 5
    row["value"] = None
    assert row.as_dict() == {"key": 5, "value": None}
    with pytest.raises(AttributeError, match="row\\['key'\\]"):
        row.key = 3
    assert len({Row(1, 2), Row(1, 2)}) == 1


def test_row_pickles_with_its_names_and_kind():
    row = Row("name", "age")("Bob", 3)
    row.set_row_kind(RowKind.UPDATE_AFTER)
    back = pickle.loads(pickle.dumps(row))
    assert back == row and back.get_field_names() == ["name", "age"]
    assert back.get_row_kind() is RowKind.UPDATE_AFTER


# --- conversions ---------------------------------------------------------------------------


def test_float_is_32_bit_and_double_is_64_bit():
    assert convert(Types.FLOAT(), 1.1) == 1.100000023841858 == float32(1.1)
    assert convert(Types.FLOAT(), 3) == 3.0
    assert convert(Types.DOUBLE(), 1.1) == 1.1
    assert convert(Types.DOUBLE(), 2) == 2.0 and type(convert(Types.DOUBLE(), 2)) is float


@pytest.mark.parametrize(
    "type_info, good, bad",
    [
        (Types.BYTE(), 127, 128),
        (Types.SHORT(), -32768, -32769),
        (Types.INT(), 2**31 - 1, 2**31),
        (Types.LONG(), -(2**63), 2**63),
        (Types.INT(), 1, "1"),
        (Types.INT(), 1, True),
        (Types.BOOLEAN(), False, 0),
        (Types.STRING(), "x", b"x"),
        (Types.DOUBLE(), 1.5, "1.5"),
        (Types.SQL_DATE(), datetime.date(2024, 1, 2), datetime.datetime(2024, 1, 2)),
    ],
)
def test_a_value_that_is_not_of_the_type_is_refused_naming_both(type_info, good, bad):
    assert convert(type_info, good) == good
    with pytest.raises(TypeError, match=f"is not a {type_info.name}"):
        convert(type_info, bad)


def test_none_is_null_of_any_type():
    for t in (Types.INT(), Types.STRING(), Types.ROW([Types.INT()]), Types.LIST(Types.INT())):
        assert convert(t, None) is None


def test_rows_tuples_lists_and_maps_convert_their_fields():
    row_type = Types.ROW([Types.INT(), Types.FLOAT()])
    row = convert(row_type, (1, 0.1))
    assert isinstance(row, Row) and repr(row) == f"Row(f0=1, f1={float32(0.1)!r})"
    named = Types.ROW_NAMED(["name", "value"], [Types.STRING(), Types.INT()])
    assert convert(named, {"name": "a", "value": 1}) == convert(named, ["a", 1])
    assert convert(named, Row(value=1, name="a")).name == "a"  # by position: sorted names
    assert convert(Types.TUPLE([Types.STRING(), Types.LONG()]), ["a", 2]) == ("a", 2)
    assert convert(Types.LIST(Types.FLOAT()), (0.1,)) == [float32(0.1)]
    assert convert(Types.MAP(Types.STRING(), Types.FLOAT()), {"a": 0.1}) == {"a": float32(0.1)}
    assert convert(Types.PICKLED_BYTE_ARRAY(), {1, 2}) == {1, 2}
    with pytest.raises(TypeError, match="has 1 field, "):
        convert(row_type, (1,))
    with pytest.raises(TypeError, match="no field 'value'"):
        convert(named, {"name": "a"})
    with pytest.raises(TypeError, match=r"^field `f0` \(INT\) got str 'x'$"):
        convert(row_type, ("x", 1.0))
    with pytest.raises(TypeError, match=r"^field `f1` \(LONG\) got float 2.5$"):
        convert(Types.TUPLE([Types.STRING(), Types.LONG()]), ("a", 2.5))
    with pytest.raises(TypeError, match="is not a LIST"):
        convert(Types.LIST(Types.STRING()), "abc")


def test_a_wrong_field_of_a_named_row_is_named_with_its_type_and_value():
    payment = Types.ROW_NAMED(["name", "amount"], [Types.STRING(), Types.DOUBLE()])
    with pytest.raises(TypeError, match=r"^field `amount` \(DOUBLE\) got str 'x'$"):
        convert(payment, ("a", "x"))
    nested = Types.ROW_NAMED(["id", "payment"], [Types.INT(), payment])
    with pytest.raises(TypeError, match=r"^field `payment.amount` \(DOUBLE\) got str 'x'$"):
        convert(nested, (1, ("a", "x")))
    with pytest.raises(TypeError, match=r"^field `payment` \(ROW_NAMED\(.*\)\) got int 7: "):
        convert(nested, (1, 7))


def test_a_keyword_row_whose_names_are_not_the_declared_ones_is_refused_naming_both():
    payment = Types.ROW_NAMED(["name", "amount"], [Types.STRING(), Types.DOUBLE()])
    # Row(name=..., amount=...) sorts its fields: amount, name; by position they would swap
    with pytest.raises(
        TypeError,
        match=r"fields \['amount', 'name'\] where .* declares "
        r"\['name', 'amount'\]",
    ):
        convert(payment, Row(name="a", amount=1.5))
    with pytest.raises(TypeError, match=r"fields \['amount', 'who'\] where"):
        convert(payment, Row(who="a", amount=1.5))
    # positional rows, dicts and rows with the declared names are converted as before
    assert convert(payment, Row("a", 1.5)).amount == 1.5
    assert convert(payment, {"amount": 1.5, "name": "a"}).name == "a"
    declared = Row("a", 1.5)
    declared.set_field_names(["name", "amount"])
    assert convert(payment, declared).as_dict() == {"name": "a", "amount": 1.5}


# --- printing ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value, text",
    [
        (1.0, "1.0"),
        (100.0, "100.0"),
        (0.001, "0.001"),
        (1.0e-4, "1.0E-4"),
        (1.0e7, "1.0E7"),
        (9999999.5, "9999999.5"),
        (-2.5e20, "-2.5E20"),
        (1 / 3, "0.3333333333333333"),
        (float("nan"), "NaN"),
        (float("-inf"), "-Infinity"),
        (-0.0, "-0.0"),
    ],
)
def test_doubles_print_as_java_does(value, text):
    assert java_double(value) == text


@pytest.mark.parametrize(
    "value, text",
    [(1.1, "1.1"), (0.1, "0.1"), (1e10, "1.0E10"), (16777217.0, "1.6777216E7"), (3.0, "3.0")],
)
def test_floats_print_with_the_digits_a_32_bit_float_needs(value, text):
    assert java_float(float32(value)) == text


def test_typed_values_print_as_pyflink_prints_them():
    tuple_type = Types.TUPLE([Types.STRING(), Types.INT()])
    assert printer(tuple_type)(("hello", 3)) == "(hello,3)"
    row_type = Types.ROW([Types.INT(), Types.STRING(), Types.BOOLEAN(), Types.FLOAT()])
    row = convert(row_type, (1, None, True, 1.1))
    assert printer(row_type)(row) == "+I[1,None,True,1.100000023841858]"  # made in Python
    nested = Types.TUPLE([Types.STRING(), row_type])
    assert printer(nested)(("a", row)) == "(a,+I[1, null, true, 1.1])"  # made in Java
    list_type = Types.LIST(Types.DOUBLE())
    assert printer(list_type)([1.0, 2.5e10]) == "[1.0, 2.5E10]"
    map_type = Types.MAP(Types.STRING(), Types.LONG())
    assert printer(map_type)({"a": 1, "b": 2}) == "{a=1, b=2}"
    ts = datetime.datetime(2024, 1, 2, 3, 4, 5, 120000)
    assert printer(Types.SQL_TIMESTAMP())(ts) == "2024-01-02 03:04:05.12"
    assert printer(Types.SQL_TIMESTAMP())(ts.replace(microsecond=0)) == "2024-01-02 03:04:05.0"
    assert printer(Types.BIG_DEC())(decimal.Decimal("1.50")) == "1.50"
    assert printer(Types.STRING())(None) == "null"


def test_untyped_values_print_as_python_strings():
    assert printer(None)((1, "a")) == "(1, 'a')"
    assert printer(Types.PICKLED_BYTE_ARRAY())(Row(1)) == "<Row(1)>"


def test_the_print_sink_writes_with_the_type_and_subtask_prefix():
    out = io.StringIO()
    collector = PrintCollector("x", printer(Types.TUPLE([Types.STRING(), Types.INT()])), out)
    collector.take([("a", 1), ("b", 2)], 1, 2)
    assert out.getvalue() == "x:2> (a,1)\nx:2> (b,2)\n"


# --- declared types in the API -------------------------------------------------------------


def test_declared_types_follow_the_stream_and_bad_ones_are_refused():
    from barrierflow.datastream import StreamExecutionEnvironment

    env = StreamExecutionEnvironment.get_execution_environment()
    row_type = Types.ROW([Types.STRING(), Types.INT()])
    stream = env.from_collection([("a", 1)], type_info=row_type)
    assert stream.get_type() == row_type
    assert stream.filter(lambda r: True).key_by(lambda r: r[0]).sum(1).get_type() == row_type
    assert stream.map(str).get_type() is None
    assert stream.map(str, output_type=Types.STRING()).get_type() == Types.STRING()
    with pytest.raises(ConfigurationError, match=r"map\(\): the type must be type information"):
        stream.map(str, output_type=str)
    with pytest.raises(ConfigurationError, match=r"from_collection\(\): 'x' .* not a ROW"):
        env.from_collection(["x"], type_info=row_type)


# --- whole buffers --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("type_info", "values"),
    [
        (Types.LONG(), [1, -5, 2**40]),
        (Types.STRING(), ["a", "b"]),
        (Types.FLOAT(), [0.1, 3, 1e10]),
        (Types.DOUBLE(), [0.1, 2.5]),
        (Types.TUPLE([Types.STRING(), Types.FLOAT()]), [("a", 0.1), ("b", 2)]),
        (Types.TUPLE([Types.PICKLED_BYTE_ARRAY(), Types.INT()]), [({1}, 1), ([2], 2)]),
    ],
)
def test_a_buffer_converts_at_once_to_what_value_by_value_gives(type_info, values):
    from barrierflow.declared_types.conversion import batch_converter

    fast = batch_converter(type_info)(list(values))
    assert fast == [convert(type_info, v) for v in values]
    assert [type(v) for v in fast] == [type(convert(type_info, v)) for v in values]


@pytest.mark.parametrize(
    ("type_info", "values"),
    [
        (Types.INT(), [1, 2**31]),  # out of range
        (Types.INT(), [1, None]),  # null
        (Types.INT(), [1, True]),
        (Types.STRING(), ["a", 1]),
        (Types.FLOAT(), [0.1, "x"]),
        (Types.TUPLE([Types.STRING(), Types.INT()]), [("a", 1), ("b", 2**40)]),
        (Types.TUPLE([Types.STRING(), Types.INT()]), [("a", 1), ["b", 2]]),
        (Types.TUPLE([Types.STRING(), Types.INT()]), [("a", 1), ("b", 2, 3)]),
    ],
)
def test_a_buffer_it_cannot_vouch_for_goes_value_by_value(type_info, values):
    from barrierflow.declared_types.conversion import batch_converter

    assert batch_converter(type_info)(list(values)) is None


def test_types_without_a_fast_path_have_none():
    from barrierflow.declared_types.conversion import batch_converter

    assert batch_converter(Types.ROW([Types.INT()])) is None
    assert batch_converter(Types.TUPLE([Types.SQL_DATE(), Types.INT()])) is None


def test_a_typed_operator_converts_names_a_wrong_value_and_keeps_side_outputs():
    from barrierflow.datastream.output_tag import SideOutput
    from barrierflow.graph.transformation import TransformationKind
    from barrierflow.runtime.operators import OperatorSpec, UserFunctionError
    from barrierflow.testing.harness import OperatorHarness

    class Emit:
        def process_element(self, value, ctx):
            yield value

    tag = SideOutput("late", ("x", "not converted"))
    spec = OperatorSpec("typed", "Typed", TransformationKind.PROCESS, Emit(),
                        output_type=Types.TUPLE([Types.STRING(), Types.FLOAT()]))  # fmt: skip
    harness = OperatorHarness(spec)
    assert harness.process([("a", 0.1), ["b", 1]]) == [("a", float32(0.1)), ("b", 1.0)]
    assert harness.operator._converted([("a", 0.1), tag]) == [("a", float32(0.1)), tag]
    with pytest.raises(
        UserFunctionError, match=r"'typed'.*\('b', 'x'\).*field `f1` \(FLOAT\) got str 'x'"
    ):
        harness.process([("a", 0.1), ("b", "x")])
