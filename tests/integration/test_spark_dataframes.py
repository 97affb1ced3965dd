"""``env.from_spark(df)`` on local Spark: a DataFrame's partitions, computed by a Spark job of
their own before the job starts, each written as one Parquet file that is a split; every row
read once, as a ``Row`` named by the DataFrame's columns, through a keyed job; and a Delta table
or an Iceberg table written by the job read back with Spark (plain Parquet reading of the
committed files needs neither Delta's nor Iceberg's jars: the log or the snapshot lists them);
a Parquet table of the session's catalog written by the job
(SparkTableSink) read back with ``spark.table``, and tables it cannot write refused before the
job starts."""

from __future__ import annotations

import glob
import os
import tempfile
import uuid

import pytest

from barrierflow.common import Types
from barrierflow.datastream import StreamExecutionEnvironment
from barrierflow.datastream.connectors.delta import DeltaSink
from barrierflow.datastream.connectors.file_system import FileSink
from barrierflow.datastream.connectors.spark_table import SparkTableSink
from barrierflow.errors import ConfigurationError
from tests.jobs.odd_even import read_committed

pytestmark = pytest.mark.spark

N = 2000


def test_a_dataframe_s_partitions_are_splits_and_each_row_is_read_once(spark, tmp_path):
    df = spark.range(N).selectExpr("id", "id % 7 AS k").repartition(5)
    staging = str(tmp_path / "staging")
    env = StreamExecutionEnvironment().set_parallelism(2)
    sums = (
        env.from_spark(df, staging_dir=staging)
        .map(lambda r: (r.k, r.id), output_type=Types.TUPLE([Types.LONG(), Types.LONG()]))
        .key_by(lambda t: t[0])
        .reduce(lambda a, b: (a[0], a[1] + b[1]))
    )
    with sums.execute_and_collect("from-spark") as results:
        final = {}
        for k, total in results:
            final[k] = max(final.get(k, 0), total)
    assert final == {k: sum(i for i in range(N) if i % 7 == k) for k in range(7)}
    assert len(glob.glob(os.path.join(staging, "part-*.parquet"))) == 5  # a file a partition


def test_the_staged_files_of_a_default_staging_directory_are_removed_when_the_job_ends(
    spark, tmp_path, monkeypatch
):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where mkdtemp makes it
    env = StreamExecutionEnvironment().set_parallelism(2)
    env.from_spark(spark.range(100)).map(lambda r: [r.id]).sink_to(FileSink(str(tmp_path / "out")))
    env.execute("from-spark-cleaned")
    assert len(read_committed(str(tmp_path / "out"))) == 100
    assert not list(tmp_path.glob("barrierflow-from-spark-*"))


def test_spark_reads_what_a_job_from_a_dataframe_committed_to_a_delta_table(spark, tmp_path):
    from deltalake import DeltaTable

    df = spark.range(N).selectExpr("id", "CAST(id % 3 AS STRING) AS part")
    table = str(tmp_path / "table")
    env = StreamExecutionEnvironment().set_parallelism(2)
    env.enable_checkpointing(200)
    env.get_checkpoint_config().set_checkpoint_storage(str(tmp_path / "ckpt"))
    env.from_spark(df, staging_dir=str(tmp_path / "staging")).map(
        lambda r: (r.id, r.part)
    ).sink_to(DeltaSink(table, Types.ROW_NAMED(["id", "part"], [Types.LONG(), Types.STRING()]),
                        partition_by="part"))  # fmt: skip
    env.execute("from-spark-to-delta")

    files = DeltaTable(table).file_uris()
    rows = spark.read.option("basePath", table).parquet(*files).collect()
    # Spark infers the partition directories' type (part=0: an integer)
    assert sorted((r.id, str(r.part)) for r in rows) == [(i, str(i % 3)) for i in range(N)]


def test_spark_reads_what_a_job_committed_to_an_iceberg_table(spark, tmp_path):
    """As README.md says to read an Iceberg table without Iceberg's Spark jars: the files of the
    table's current snapshot, listed by pyiceberg, read as Parquet (files of attempts that
    failed are in no snapshot, and are not read)."""
    import pyarrow as pa
    from pyiceberg.catalog import load_catalog

    from barrierflow.datastream.connectors.iceberg import IcebergSink

    properties = {
        "type": "sql",
        "uri": f"sqlite:///{tmp_path}/catalog.db",
        "warehouse": f"file://{tmp_path}/warehouse",
    }
    catalog = load_catalog("local", **properties)
    catalog.create_namespace("web")
    catalog.create_table("web.views", pa.schema([("id", pa.int64()), ("page", pa.string())]))
    env = StreamExecutionEnvironment().set_parallelism(2)
    env.enable_checkpointing(200)
    env.get_checkpoint_config().set_checkpoint_storage(str(tmp_path / "ckpt"))
    env.from_spark(spark.range(N), staging_dir=str(tmp_path / "staging")).map(
        lambda r: (r.id, f"/page/{r.id % 5}")
    ).sink_to(IcebergSink("local", "web.views", properties))
    env.execute("from-spark-to-iceberg")

    table = catalog.load_table("web.views")
    files = [task.file.file_path for task in table.scan().plan_files()]
    rows = spark.read.parquet(*files).collect()
    assert sorted((r.id, r.page) for r in rows) == [(i, f"/page/{i % 5}") for i in range(N)]


def _table(spark, columns: str, using: str = "parquet") -> str:
    name = f"bf_{uuid.uuid4().hex[:12]}"
    spark.sql(f"CREATE TABLE {name} ({columns}) USING {using}")
    return name


def test_spark_reads_what_a_job_committed_to_a_table_of_its_catalog(spark, tmp_path):
    name = _table(spark, "id BIGINT, k STRING")
    spark.table(name).collect()  # Spark caches the table's (empty) file listing
    env = StreamExecutionEnvironment().set_parallelism(2)
    env.enable_checkpointing(200)
    env.get_checkpoint_config().set_checkpoint_storage(str(tmp_path / "ckpt"))
    row = Types.ROW_NAMED(["id", "k"], [Types.LONG(), Types.STRING()])
    env.from_spark(spark.range(N), staging_dir=str(tmp_path / "staging")).map(
        lambda r: (r.id, str(r.id % 3)), output_type=row
    ).sink_to(SparkTableSink(name))
    env.execute("from-spark-to-a-spark-table")

    rows = spark.table(name).collect()  # the refresh made Spark list the committed files
    assert sorted((r.id, r.k) for r in rows) == [(i, str(i % 3)) for i in range(N)]


@pytest.mark.parametrize(
    ("create", "message"),
    [
        (None, "there is no table"),
        (("id BIGINT", "json"), "a json table; this sink commits only to Parquet tables"),
        (("id BIGINT, other STRING", "parquet"), "the table has columns"),
        (("id BIGINT, k STRING", "parquet PARTITIONED BY (k)"), r"partitioned by \['k'\]"),
    ],
)
def test_a_table_the_sink_cannot_write_fails_the_job_before_it_starts(spark, create, message):
    name = "bf_missing" if create is None else _table(spark, *create)
    env = StreamExecutionEnvironment().set_parallelism(1)
    row = Types.ROW_NAMED(["id", "k"], [Types.LONG(), Types.STRING()])
    env.from_collection([(1, "a")], type_info=row).sink_to(SparkTableSink(name))
    with pytest.raises(ConfigurationError, match=message):
        env.execute("refused")
