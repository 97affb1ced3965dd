"""Declared types as Spark types, untyped values typed from a sample (or refused naming the
column), and values converted to what Spark takes (no Spark session: Spark's type classes
only)."""

from __future__ import annotations

import decimal

import pytest
from pyspark.sql import types as T

from barrierflow.common import Types
from barrierflow.common.types import Row
from barrierflow.state_processor.spark_types import (
    UnsupportedValueError,
    converter,
    infer_type,
    spark_type,
)

PROFILE = Types.ROW_NAMED(
    ["id", "tags", "scores", "pair"],
    [
        Types.LONG(),
        Types.LIST(Types.STRING()),
        Types.MAP(Types.STRING(), Types.DOUBLE()),
        Types.TUPLE([Types.INT(), Types.BIG_INT()]),
    ],
)


def test_a_declared_type_gives_its_spark_type():
    assert spark_type(PROFILE, "profile") == T.StructType(
        [
            T.StructField("id", T.LongType()),
            T.StructField("tags", T.ArrayType(T.StringType())),
            T.StructField("scores", T.MapType(T.StringType(), T.DoubleType())),
            T.StructField(
                "pair",
                T.StructType(
                    [
                        T.StructField("f0", T.IntegerType()),
                        T.StructField("f1", T.DecimalType(38, 0)),
                    ]
                ),
            ),
        ]
    )
    assert spark_type(None, "x") is None and spark_type(Types.PICKLED_BYTE_ARRAY(), "x") is None


def test_values_convert_to_what_spark_takes_for_their_type():
    convert = converter(spark_type(PROFILE, "profile"))
    stored = Row(7, ["a"], {"x": 1.5}, (1, 2**70))
    stored.set_field_names(["id", "tags", "scores", "pair"])
    assert convert(stored) == (7, ["a"], {"x": 1.5}, (1, decimal.Decimal(2**70)))
    assert convert({"id": 7, "tags": [], "scores": {}, "pair": None}) == (7, [], {}, None)
    assert converter(T.LongType()) is None  # taken as it is


def test_untyped_values_are_typed_from_a_sample():
    named = Row(1, "a")
    named.set_field_names(["n", "s"])
    assert infer_type([None, 1, 2], "c") == T.LongType()
    assert infer_type([1, 2.5], "c") == T.DoubleType()
    assert infer_type([named], "c") == T.StructType(
        [T.StructField("n", T.LongType()), T.StructField("s", T.StringType())]
    )
    assert infer_type([{"a": [1]}, {"b": []}], "c") == T.MapType(
        T.StringType(), T.ArrayType(T.LongType())
    )
    assert infer_type([None], "c") == T.NullType()


def test_what_spark_cannot_hold_is_refused_naming_the_column():
    class Custom:
        pass

    with pytest.raises(UnsupportedValueError, match=r"state 'x' of 'op' holds .*Custom"):
        infer_type([Custom()], "state 'x' of 'op'")
    with pytest.raises(UnsupportedValueError, match="different types"):
        infer_type([1, "a"], "c")
    with pytest.raises(UnsupportedValueError, match="no type for SQL_TIME"):
        spark_type(Types.SQL_TIME(), "c")
