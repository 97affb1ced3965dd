"""The state processor on local Spark: the state of a stopped job read into DataFrames and
compared with the counts computed in the test, for both backends and both savepoint formats
(and a retained checkpoint); SQL on it from the command line; a savepoint bootstrapped from a
DataFrame that a job starts from; an operator removed, then restored with and without -n; a
bad value fixed in a copy of a savepoint."""

from __future__ import annotations

import glob
import json
import time
from collections import defaultdict
from pathlib import Path

import pytest
from typer.testing import CliRunner

from barrierflow.cli import app
from barrierflow.common import Types
from barrierflow.common.job_client import SavepointFormatType
from barrierflow.datastream import StreamExecutionEnvironment
from barrierflow.datastream.connectors.number_seq import NumberSequenceSource
from barrierflow.datastream.state import ValueStateDescriptor
from barrierflow.datastream.state_backend import EmbeddedRocksDBStateBackend, HashMapStateBackend
from barrierflow.errors import ConfigurationError
from barrierflow.state_processor import (
    KeyedStateBootstrapFunction,
    KeyedStateReaderFunction,
    OperatorTransformation,
    SavepointReader,
    SavepointWriter,
)
from tests.jobs.keyed_counts import BY_PARITY, COUNT, LAST, SUM, counts_job
from tests.jobs.odd_even import read_committed

pytestmark = pytest.mark.spark

N, KEYS = 6000, 40


def wait_for(condition, timeout_s: float = 90) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def expected_state(records: list[list[int]]) -> dict[int, tuple]:
    """(count, sum, last three values, counts by parity) per key, from the committed output
    ``[key, value, count]``."""
    by_key: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for key, value, count in records:
        by_key[key].append((count, value))
    expected = {}
    for key, seen in by_key.items():
        values = [v for _, v in sorted(seen)]
        parity = defaultdict(int)
        for v in values:
            parity["odd" if v % 2 else "even"] += 1
        expected[key] = (len(values), sum(values), values[-3:], dict(parity))
    return expected


def savepoints_of_a_stopped_job(spark, root: Path, backend: str) -> tuple[str, str, dict]:
    """A canonical savepoint taken once every value's output was committed, then the native
    one the job stopped with; and the state they hold, from the output."""
    env = StreamExecutionEnvironment().set_spark_session(spark).set_parallelism(2)
    counts_job(env, N, KEYS, str(root / "out"), str(root / "ckpt"), backend)
    client = env.execute_async("counts")
    wait_for(lambda: len(read_committed(str(root / "out"))) == N)
    canonical = client.trigger_savepoint(str(root / "sp"), SavepointFormatType.CANONICAL).result()
    native = client.stop_with_savepoint(
        False, str(root / "sp"), format_type=SavepointFormatType.NATIVE
    ).result()
    return canonical, native, expected_state(read_committed(str(root / "out")))


def read_counts(spark, path: str) -> dict[int, tuple]:
    frame = SavepointReader.read(spark, path).read_keyed_state(
        "counter", [COUNT, SUM, LAST, BY_PARITY]
    )
    assert [f.name for f in frame.schema.fields] == ["key", "count", "sum", "last", "by_parity"]
    assert frame.schema["key"].dataType.simpleString() == "bigint"  # the declared key type
    return {r.key: (r["count"], r["sum"], r["last"], r["by_parity"]) for r in frame.collect()}


class Doubled(KeyedStateReaderFunction):
    def open(self, runtime_context):
        self.sum = runtime_context.get_state(SUM)

    def read_key(self, key, ctx):
        yield {"key": key, "double": self.sum.value() * 2}


@pytest.fixture(scope="module", params=["hashmap", "rocksdb"])
def stopped(request, spark, tmp_path_factory):
    root = tmp_path_factory.mktemp(f"stopped-{request.param}")
    return request.param, root, savepoints_of_a_stopped_job(spark, root, request.param)


def test_the_state_of_a_stopped_job_reads_as_computed_in_both_formats(spark, stopped):
    backend, root, (canonical, native, expected) = stopped
    assert len(expected) == KEYS and sum(c for c, *_ in expected.values()) == N
    assert read_counts(spark, canonical) == expected
    assert read_counts(spark, native) == expected
    splits = SavepointReader.read(spark, native).read_list_state("values", "splits").collect()
    assert splits == []  # every split was read to its end: no reader holds one any more
    info = CliRunner().invoke(app, ["savepoint", "info", native, "--json"])
    formats = {s["format"] for s in json.loads(info.output)["states"] if s["uid"] == "counter"}
    assert formats == ({"rocksdb files"} if backend == "rocksdb" else {"key groups v2"})
    retained = sorted(glob.glob(f"{root}/ckpt/*/chk-*"), key=lambda p: int(p.rsplit("-", 1)[1]))
    if retained:  # a checkpoint after every output was committed holds the same
        doubled = SavepointReader.read(spark, retained[-1]).read_keyed_state("counter", Doubled())
        assert {r.key: r.double for r in doubled.collect()} == {
            k: 2 * s for k, (_, s, _, _) in expected.items()
        }


def test_sql_on_an_operators_keyed_state_from_the_command_line(spark, stopped):
    _, _, (canonical, _, _) = stopped
    result = CliRunner().invoke(
        app,
        ["state", "query", canonical, "--uid", "counter", "--json",
         "SELECT count(*) AS keys, sum(`sum`) AS total, max(count) AS most FROM `counter`"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    row = json.loads(result.output.strip().splitlines()[-1])
    assert row == {"keys": KEYS, "total": sum(range(N)), "most": N // KEYS}


class Counts(KeyedStateBootstrapFunction):
    """The count of each key from a DataFrame row."""

    def open(self, runtime_context):
        self.count = runtime_context.get_state(COUNT)

    def process_element(self, row, ctx):
        assert ctx.get_current_key() == row.key
        self.count.update(row["count"])


def counts_from(frame) -> object:
    return (
        OperatorTransformation.bootstrap_with(frame)
        .key_by(lambda row: row.key, Types.LONG())
        .transform(Counts())
    )


@pytest.mark.parametrize(
    ("written_with", "restored_into"),
    [(HashMapStateBackend(), "rocksdb"), (EmbeddedRocksDBStateBackend(), "hashmap")],
)
def test_a_job_starts_from_a_savepoint_bootstrapped_from_a_dataframe(
    spark, tmp_path, written_with, restored_into
):
    frame = spark.createDataFrame([(k, 100 * k) for k in range(KEYS)], "key long, count long")
    path = (
        SavepointWriter.new_savepoint(spark, written_with, 128)
        .with_operator("counter", counts_from(frame))
        .write(str(tmp_path / "bootstrapped"))
    )
    env = StreamExecutionEnvironment().set_spark_session(spark).set_parallelism(3)
    counts_job(env, 2 * KEYS, KEYS, str(tmp_path / "out"), str(tmp_path / "ckpt"), restored_into,
               source=NumberSequenceSource(0, 2 * KEYS - 1))  # fmt: skip
    env.set_restore_path(path)
    env.execute("bootstrapped")
    counts = defaultdict(list)
    for key, _, count in read_committed(str(tmp_path / "out")):
        counts[key].append(count)
    assert {k: sorted(c) for k, c in counts.items()} == {
        k: [100 * k + 1, 100 * k + 2] for k in range(KEYS)
    }


def restore(spark, root: Path, path: str, allow_non_restored: bool = False) -> list[list[int]]:
    """The counter job alone, restored from ``path``, over values 0..KEYS-1 of a new source
    (the old one's positions are at the end of its values): its output."""
    env = StreamExecutionEnvironment().set_spark_session(spark).set_parallelism(2)
    counts_job(env, KEYS, KEYS, str(root / "out"), str(root / "ckpt"),
               source=NumberSequenceSource(0, KEYS - 1), source_uid="new-values")  # fmt: skip
    env.set_restore_path(path)
    if allow_non_restored:
        env.configure({"execution.state-recovery.ignore-unclaimed-state": True})
    env.execute("restored")
    return read_committed(str(root / "out"))


def test_a_removed_operator_restores_without_n_and_a_fixed_value_is_restored(spark, tmp_path):
    env = StreamExecutionEnvironment().set_spark_session(spark).set_parallelism(2)
    counts_job(env, 400, KEYS, str(tmp_path / "out"), str(tmp_path / "ckpt"), extra_operator=True)
    client = env.execute_async("two operators")
    wait_for(lambda: len(read_committed(str(tmp_path / "out"))) == 400)
    original = client.stop_with_savepoint(False, str(tmp_path / "sp")).result()
    per_key = 400 // KEYS

    with pytest.raises(ConfigurationError, match=r"operators \['values', 'extra'\].*-n"):
        restore(spark, tmp_path / "a", original)
    restored = restore(spark, tmp_path / "b", original, allow_non_restored=True)
    assert sorted(c for _, _, c in restored) == [per_key + 1] * KEYS

    removed = (
        SavepointWriter.from_existing_savepoint(spark, original)
        .remove_operator("extra")
        .remove_operator("values")
        .write(str(tmp_path / "removed"))
    )
    uids = {op.uid for op in SavepointReader.read(spark, removed).metadata.operators}
    assert uids == {"counter", "sink"}
    assert sorted(c for _, _, c in restore(spark, tmp_path / "c", removed)) == [per_key + 1] * KEYS

    reader = SavepointReader.read(spark, original)
    fixed = reader.read_keyed_state("counter", [COUNT]).selectExpr(
        "key", "IF(key = 7, 1000, count) AS count"
    )  # a bad value, fixed in Spark
    repaired = (
        SavepointWriter.from_existing_savepoint(spark, original)
        .remove_operator("counter")
        .with_operator("counter", counts_from(fixed))
        .write(str(tmp_path / "repaired"))
    )
    seen = ValueStateDescriptor("seen", Types.LONG())
    before = reader.read_keyed_state("extra", seen).collect()
    after = SavepointReader.read(spark, repaired).read_keyed_state("extra", seen).collect()
    assert sorted(after) == sorted(before)  # the operator carried over is as it was
    out = restore(spark, tmp_path / "d", repaired, allow_non_restored=True)
    assert {k: c for k, _, c in out} == {k: (1001 if k == 7 else per_key + 1) for k in range(KEYS)}
