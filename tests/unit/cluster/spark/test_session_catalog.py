"""The Spark session catalog's reading of ``DESCRIBE TABLE EXTENDED`` and of Spark's locations,
and its error when there is no session (no Spark started: rows are plain tuples)."""

from __future__ import annotations

import pytest

from barrierflow.cluster.spark.session_catalog import SessionCatalog, _details, local_or_uri
from barrierflow.errors import ConfigurationError


def test_the_detailed_information_is_read_by_name_and_columns_are_not_taken_for_it():
    rows = [
        ("k", "bigint", None),
        ("Location", "column named like a detail", None),
        ("", "", ""),
        ("# Detailed Table Information", "", ""),
        ("Catalog", "spark_catalog", ""),
        ("Provider", "parquet", ""),
        ("Location", "file:/tmp/t", ""),
    ]
    details = _details(rows)
    assert details["Provider"] == "parquet"
    assert details["Location"] == "file:/tmp/t"


@pytest.mark.parametrize(
    ("location", "expected"),
    [
        ("file:/tmp/t", "/tmp/t"),
        ("file:///tmp/t", "/tmp/t"),
        ("s3a://bucket/t", "s3a://bucket/t"),
    ],
)
def test_spark_s_local_locations_become_paths(location, expected):
    assert local_or_uri(location) == expected


def test_without_a_session_the_table_is_refused_with_what_to_do():
    with pytest.raises(ConfigurationError, match="no active Spark session: create it"):
        SessionCatalog(lambda: None).describe("db.t")
