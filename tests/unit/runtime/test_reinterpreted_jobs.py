"""Jobs with a stream reinterpreted as keyed, on threads (without Spark): the output of a keyed
operator that kept the key, reinterpreted with that key, gives what a second key_by gives,
record by record, to a keyed process and to a count window; a stream not partitioned by key
group fails the job with the check's error."""

from __future__ import annotations

import pytest

from barrierflow.client.submission_context import SubmissionContext, installed
from barrierflow.cluster.scaling.rescaler import RescaleRefused
from barrierflow.common import Configuration, RestartStrategies
from barrierflow.datastream import DataStreamUtils, StreamExecutionEnvironment
from barrierflow.datastream.connectors.file_system import FileSink
from barrierflow.datastream.connectors.number_seq import NumberSequenceSource
from barrierflow.datastream.functions import KeyedProcessFunction
from barrierflow.datastream.state import ValueStateDescriptor
from barrierflow.errors import JobExecutionError
from barrierflow.testing.thread_deployer import ThreadExecutor
from tests.jobs.odd_even import read_committed

N = 600
MANY = 6000  # records of the job rescaled while it runs (several source batches)


def env_on_threads(tmp_path, parallelism: int = 2) -> StreamExecutionEnvironment:
    conf = Configuration({"rest.port": -1})
    with installed(SubmissionContext(configuration=conf, executor=ThreadExecutor())):
        env = StreamExecutionEnvironment().set_parallelism(parallelism)
    env.enable_checkpointing(50)
    env.get_checkpoint_config().set_checkpoint_storage(str(tmp_path / "ckpt"))
    env.set_restart_strategy(RestartStrategies.no_restart())
    return env


class Tag(KeyedProcessFunction):
    """(key, value): the key kept, so its output is partitioned by key group."""

    def process_element(self, value, ctx):
        yield ctx.get_current_key(), value


class RunningCount(KeyedProcessFunction):
    def open(self, runtime_context):
        self.count = runtime_context.get_state(ValueStateDescriptor("n", None))

    def process_element(self, value, ctx):
        n = (self.count.value() or 0) + 1
        self.count.update(n)
        yield [value[0], value[1], n]


def run(tmp_path, name: str, reinterpret: bool, windows: bool = False) -> list:
    env = env_on_threads(tmp_path / name)
    tagged = (
        env.from_source(NumberSequenceSource(1, N), "numbers")
        .set_parallelism(1)  # each key's records in one order, whatever the run
        .key_by(lambda v: v % 7)
        .process(Tag())
        .uid("tag")
    )
    if reinterpret:
        keyed = DataStreamUtils.reinterpret_as_keyed_stream(tagged, lambda r: r[0])
    else:
        keyed = tagged.key_by(lambda r: r[0])
    if windows:
        out = keyed.count_window(10).reduce(lambda a, b: (a[0], a[1] + b[1])).map(list)
    else:
        out = keyed.process(RunningCount()).uid("count")
    out.sink_to(FileSink(str(tmp_path / name / "out")))
    env.execute(name)
    return read_committed(str(tmp_path / name / "out"))


@pytest.mark.parametrize("windows", [False, True])
def test_a_reinterpreted_stream_gives_what_key_by_gives(tmp_path, windows):
    reinterpreted = run(tmp_path, "reinterpreted", True, windows)
    shuffled = run(tmp_path, "shuffled", False, windows)
    assert sorted(map(tuple, reinterpreted)) == sorted(map(tuple, shuffled))
    assert len(reinterpreted) == (N if not windows else 7 * 8)  # 85 or 86 records per key


def test_a_stream_not_partitioned_by_key_group_fails_the_job(tmp_path):
    env = env_on_threads(tmp_path)
    pairs = env.from_source(NumberSequenceSource(1, N), "numbers").map(lambda v: (v % 7, v))
    keyed = DataStreamUtils.reinterpret_as_keyed_stream(pairs, lambda r: r[0])
    keyed.process(RunningCount()).uid("count").sink_to(FileSink(str(tmp_path / "out")))
    with pytest.raises(JobExecutionError) as failed:
        env.execute("mis-partitioned")
    text = "".join(str(e) for e in (failed.value, failed.value.__cause__) if e is not None)
    assert "operator 'count' (RunningCount)" in text, text
    assert "failed on record" in text
    assert "the stream given to reinterpret_as_keyed_stream is not partitioned" in text


class FailOnce(KeyedProcessFunction):
    """Tag, failing once on value ``at`` (a file marks that it did)."""

    def __init__(self, marker: str, at: int) -> None:
        self.marker, self.at = marker, at

    def process_element(self, value, ctx):
        import os

        if value == self.at and not os.path.exists(self.marker):
            open(self.marker, "w").close()
            raise RuntimeError("once")
        yield ctx.get_current_key(), value


def slowly(value: int) -> int:
    import time

    time.sleep(0.0005)  # about 3 s of MANY at parallelism 1: time to rescale the job
    return value


def check_counts(records: list, n: int = N) -> None:
    """Every value once; each key's counts 1, 2, ... once each (its state neither lost nor
    counted twice; the order of a key's values depends on the sources' interleaving)."""
    assert sorted(r[1] for r in records) == list(range(1, n + 1))
    by_key: dict = {}
    for key, value, count in records:
        by_key.setdefault(key, []).append(count)
        assert value % 7 == key
    assert all(sorted(counts) == list(range(1, len(counts) + 1)) for counts in by_key.values())


def reinterpreted_counts(env: StreamExecutionEnvironment, tag, out: str, slow=False) -> None:
    numbers = env.from_source(NumberSequenceSource(1, MANY if slow else N), "numbers")
    if slow:
        numbers = numbers.map(slowly)
    tagged = numbers.key_by(lambda v: v % 7).process(tag).uid("tag")
    keyed = DataStreamUtils.reinterpret_as_keyed_stream(tagged, lambda r: r[0])
    keyed.process(RunningCount()).uid("count").sink_to(FileSink(out))


def test_a_failure_restores_the_reinterpreted_keyed_state_from_the_checkpoint(tmp_path):
    env = env_on_threads(tmp_path)
    env.set_restart_strategy(RestartStrategies.fixed_delay_restart(3, 10))
    reinterpreted_counts(env, FailOnce(str(tmp_path / "failed"), N // 2), str(tmp_path / "out"))
    result = env.execute("fails once")
    assert result.attempts == 2
    check_counts(read_committed(str(tmp_path / "out")))


def test_a_rescale_keeps_a_keyed_operators_output_aligned_with_its_key_groups(tmp_path):
    from tests.unit.cluster.test_rescaling import running

    env = env_on_threads(tmp_path, parallelism=1)
    reinterpreted_counts(env, Tag(), str(tmp_path / "out"), slow=True)
    client = env.execute_async("rescaled")
    running(client)
    assert client.rescale(2).result().checkpoint_id is not None
    result = client.get_job_execution_result().result()
    assert result.attempts == 2  # the rescale's; the check found nothing out of place
    check_counts(read_committed(str(tmp_path / "out")), MANY)


def test_a_job_reading_a_source_reinterpreted_as_keyed_refuses_a_rescale_and_runs_on(tmp_path):
    """The source's input is partitioned for the job's parallelism outside it: at another,
    subtasks would read key groups they do not own. The rescale is refused, saying so and what
    to do instead; the job goes on at its parallelism."""
    from tests.unit.cluster.test_rescaling import running

    env = env_on_threads(tmp_path, parallelism=1)  # one subtask owns every key group
    pairs = (
        env.from_source(NumberSequenceSource(1, MANY), "numbers")
        .map(slowly)
        .map(lambda v: (v % 7, v))
    )
    keyed = DataStreamUtils.reinterpret_as_keyed_stream(pairs, lambda r: r[0])
    keyed.process(RunningCount()).uid("count").sink_to(FileSink(str(tmp_path / "out")))
    client = env.execute_async("fixed")
    running(client)
    with pytest.raises(RescaleRefused) as refused:
        client.rescale(2).result()
    assert "reinterpreted as keyed" in str(refused.value)
    assert "source 'numbers'" in str(refused.value)
    assert "KeyGroupPartitioner" in str(refused.value)
    result = client.get_job_execution_result().result()
    assert result.attempts == 1
    check_counts([[k, v, n] for k, v, n in read_committed(str(tmp_path / "out"))], MANY)
