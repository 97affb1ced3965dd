"""Whole jobs on the shared local Spark session."""

from __future__ import annotations

import glob
import json
import os
import re
from collections import Counter

import pytest
from typer.testing import CliRunner

from barrierflow.cli import app
from barrierflow.common import RestartStrategies
from barrierflow.datastream import StreamExecutionEnvironment
from barrierflow.datastream.connectors.discarding import DiscardingSink
from barrierflow.datastream.connectors.file_system import FileSink, FileSource
from barrierflow.datastream.connectors.number_seq import NumberSequenceSource
from barrierflow.datastream.functions.one_input import KeyedProcessFunction
from barrierflow.datastream.state import (
    ListStateDescriptor,
    MapStateDescriptor,
    ValueStateDescriptor,
)
from barrierflow.errors import JobExecutionError
from tests.jobs import odd_even

pytestmark = pytest.mark.spark


def _records(out_dir: str) -> list:
    return odd_even.read_committed(out_dir)


def test_odd_even_job_commits_every_sum_once_while_checkpoints_complete(spark, tmp_path):
    env = StreamExecutionEnvironment().set_parallelism(2)
    odd_even.build(env, 6000, str(tmp_path / "out"), str(tmp_path / "ckpt"), 100, 0.0003)

    result = env.execute("odd-even")

    odd_even.check_exactly_once(_records(str(tmp_path / "out")), 6000)
    assert result.attempts == 1
    assert result.num_completed_checkpoints >= 3  # periodic ones and the final one
    assert result.final_checkpoint is not None and os.path.exists(result.final_checkpoint)
    assert not glob.glob(str(tmp_path / "out" / ".*")), "uncommitted files left behind"


def test_operator_code_runs_in_executor_processes_not_in_the_driver(spark, tmp_path):
    env = StreamExecutionEnvironment().set_parallelism(2)
    (
        env.from_source(NumberSequenceSource(1, 200), "numbers")
        .map(lambda x: [x, os.getpid()])
        .sink_to(FileSink(str(tmp_path / "out")))
    )
    env.execute("where-does-it-run")

    pids = {pid for _, pid in _records(str(tmp_path / "out"))}
    assert pids and os.getpid() not in pids


def test_checkpoints_list_shows_the_completed_checkpoints(spark, tmp_path):
    env = StreamExecutionEnvironment().set_parallelism(2)
    odd_even.build(env, 3000, str(tmp_path / "out"), str(tmp_path / "ckpt"), 100, 0.0003)
    result = env.execute("listed")

    listed = CliRunner().invoke(app, ["checkpoints", "list", str(tmp_path / "ckpt"), "--json"])

    assert listed.exit_code == 0, listed.output
    rows = json.loads(listed.output)
    # every checkpoint of the run, subsumed ones included; only the retained one restorable
    assert [r["id"] for r in rows] == [c.checkpoint_id for c in result.checkpoint_history]
    assert len(rows) == result.num_completed_checkpoints >= 2
    assert {r["job"] for r in rows} == {result.job_id}
    assert all(r["status"] == "COMPLETED" and r["tasks"] == "4/4" for r in rows)
    assert [r["id"] for r in rows if r["restorable"]] == list(result.checkpoint_ids)
    table = CliRunner().invoke(app, ["checkpoints", "list", str(tmp_path / "ckpt")])
    assert "listed" in table.output and str(result.checkpoint_ids[-1]) in table.output
    shown = CliRunner().invoke(
        app, ["checkpoints", "show", str(tmp_path / "ckpt"), str(rows[0]["id"]), "--json"]
    )
    doc = json.loads(shown.output)
    assert doc["record"]["status"] == "COMPLETED" and doc["metadata"] is None  # subsumed


class CountWords(KeyedProcessFunction):
    def open(self, runtime_context):
        self.count = runtime_context.get_state(ValueStateDescriptor("count"))

    def process_element(self, word, ctx):
        count = (self.count.value() or 0) + 1
        self.count.update(count)
        yield [word, count]


def test_word_count_over_text_files_counts_every_word(spark, tmp_path):
    inputs = tmp_path / "in"
    inputs.mkdir()
    texts = ["the quick brown fox\njumps over the lazy dog\n", "the end\nno newline at the end"]
    for i, text in enumerate(texts):
        (inputs / f"part-{i}.txt").write_text(text)
    (inputs / ".hidden").write_text("ignored words\n")
    env = StreamExecutionEnvironment().set_parallelism(2)
    env.enable_checkpointing(100)
    env.get_checkpoint_config().set_checkpoint_storage(str(tmp_path / "ckpt"))
    (
        env.from_source(FileSource(str(inputs)), "lines")
        .flat_map(lambda line: line.split())
        .key_by(lambda w: w)
        .process(CountWords())
        .sink_to(FileSink(str(tmp_path / "out")))
    )
    env.execute("word-count")

    expected = Counter(w for t in texts for w in t.split())
    final = {}
    for word, count in _records(str(tmp_path / "out")):
        final[word] = max(final.get(word, 0), count)
    assert final == dict(expected)


class Everything(KeyedProcessFunction):
    """Uses list and map state as well, so that their snapshots are exercised end to end."""

    def open(self, runtime_context):
        self.seen = runtime_context.get_list_state(ListStateDescriptor("seen"))
        self.by_parity = runtime_context.get_map_state(MapStateDescriptor("by-parity"))

    def process_element(self, value, ctx):
        self.seen.add(value)
        self.by_parity.put(value % 2, value)
        if len(self.seen.get()) == 5:
            yield [ctx.get_current_key(), self.seen.get(), dict(self.by_parity.items())]


def test_union_of_two_sources_feeds_keyed_list_and_map_state(spark, tmp_path):
    env = StreamExecutionEnvironment().set_parallelism(2)
    env.enable_checkpointing(50)
    env.get_checkpoint_config().set_checkpoint_storage(str(tmp_path / "ckpt"))
    low = env.from_source(NumberSequenceSource(0, 49), "low")
    high = env.from_source(NumberSequenceSource(50, 99), "high")
    (
        low.union(high)
        .filter(lambda x: x % 3 != 0)
        .key_by(lambda x: x % 10)
        .process(Everything())
        .sink_to(FileSink(str(tmp_path / "out")))
    )
    env.execute("union")

    out = _records(str(tmp_path / "out"))
    values = [v for v in range(100) if v % 3 != 0]
    expected_keys = {k for k in range(10) if sum(1 for v in values if v % 10 == k) >= 5}
    assert {r[0] for r in out} == expected_keys
    for key, seen, by_parity in out:
        assert len(seen) == 5 and all(v % 10 == key for v in seen)
        assert by_parity == {str(key % 2): seen[-1]}  # the last put; JSON keys are strings


def test_a_failing_user_function_names_the_operator_the_subtask_and_the_record(spark, tmp_path):
    env = StreamExecutionEnvironment().set_parallelism(2)
    env.set_restart_strategy(RestartStrategies.no_restart())
    (
        env.from_source(NumberSequenceSource(1, 100), "numbers")
        .map(lambda x: 1 // (x - 42))
        .uid("divide")
        .sink_to(DiscardingSink())
    )
    with pytest.raises(JobExecutionError) as failure:
        env.execute("doomed")

    text = str(failure.value)
    assert re.search(r"operator 'divide' \(Map\), subtask [01] failed on record 42", text), text
    assert "ZeroDivisionError" in text
    assert "Task traceback" in text and "1 // (x - 42)" in text


def test_a_job_that_keeps_failing_gives_up_after_the_configured_restarts(spark, tmp_path):
    env = StreamExecutionEnvironment().set_parallelism(1)
    env.enable_checkpointing(100)
    env.get_checkpoint_config().set_checkpoint_storage(str(tmp_path / "ckpt"))
    env.set_restart_strategy(RestartStrategies.fixed_delay_restart(2, 10))
    env.from_source(NumberSequenceSource(1, 10), "numbers").map(lambda x: x / 0).sink_to(
        DiscardingSink()
    )
    with pytest.raises(JobExecutionError, match=r"after 3 attempt\(s\).*ZeroDivisionError"):
        env.execute("always-failing")


def test_execute_async_reports_running_and_cancel_stops_the_job_within_seconds(spark, tmp_path):
    import time

    from barrierflow.common import JobStatus
    from barrierflow.errors import JobCanceledError

    env = StreamExecutionEnvironment().set_parallelism(2)
    odd_even.build(env, 10_000_000, str(tmp_path / "out"), str(tmp_path / "ckpt"), 100, 0.001)
    client = env.execute_async("to-cancel")
    deadline = time.monotonic() + 60
    while not glob.glob(str(tmp_path / "ckpt" / "*" / "chk-*" / "_metadata")):
        assert time.monotonic() < deadline, "no checkpoint completed within 60 s"
        time.sleep(0.1)
    assert client.get_job_status().result() is JobStatus.RUNNING

    canceled_at = time.monotonic()
    client.cancel()
    with pytest.raises(JobCanceledError):
        client.get_job_execution_result().result(30)
    assert client.get_job_status().result() is JobStatus.CANCELED
    assert time.monotonic() - canceled_at < 15
