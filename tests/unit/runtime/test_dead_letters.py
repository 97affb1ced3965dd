"""Dead letters: records an operator's function fails on go to its dead-letter side output as
``DeadLetter(record, operator, error)`` and the job goes on, every record either in the output
or in the dead letters, once (on threads, without Spark); map, flat_map, filter, process and
keyed process; and a job whose dead letters nobody reads is refused before it runs."""

from __future__ import annotations

import pytest

from barrierflow.client.submission_context import SubmissionContext, installed
from barrierflow.common import Configuration
from barrierflow.datastream import DeadLetter, OutputTag, StreamExecutionEnvironment
from barrierflow.datastream.connectors.file_system import FileSink
from barrierflow.datastream.connectors.number_seq import NumberSequenceSource
from barrierflow.errors import ConfigurationError
from barrierflow.testing.thread_deployer import ThreadExecutor
from tests.jobs.odd_even import read_committed

N = 500


def env_on_threads(parallelism: int = 2) -> StreamExecutionEnvironment:
    conf = Configuration({"rest.port": -1})
    with installed(SubmissionContext(configuration=conf, executor=ThreadExecutor())):
        env = StreamExecutionEnvironment().set_parallelism(parallelism)
    env.enable_checkpointing(50)
    return env


def parse(value: int) -> list[int]:
    if value % 100 == 7:
        raise ValueError(f"bad record {value}")
    return [value]


def as_letter(letter: DeadLetter) -> list:
    assert isinstance(letter, DeadLetter)
    return [letter.record, letter.operator, letter.error]


@pytest.mark.parametrize("keyed", [False, True])
def test_failed_records_go_to_the_dead_letters_and_the_rest_to_the_output(tmp_path, keyed):
    env = env_on_threads()
    env.get_checkpoint_config().set_checkpoint_storage(str(tmp_path / "ckpt"))
    letters = OutputTag("dead")
    numbers = env.from_source(NumberSequenceSource(1, N), "numbers")
    if keyed:
        numbers = numbers.key_by(lambda x: x % 2)
    parsed = numbers.map(parse).uid("parse").with_dead_letters(letters)
    parsed.sink_to(FileSink(str(tmp_path / "out")))
    parsed.get_side_output(letters).map(as_letter).sink_to(FileSink(str(tmp_path / "dead")))
    env.execute("dead letters")

    out = sorted(r[0] for r in read_committed(str(tmp_path / "out")))
    dead = sorted(read_committed(str(tmp_path / "dead")))
    bad = [v for v in range(1, N + 1) if v % 100 == 7]
    assert out == [v for v in range(1, N + 1) if v % 100 != 7]
    assert [d[0] for d in dead] == bad
    assert {d[1] for d in dead} == {"'parse' (Map)"}
    assert dead[0][2] == "ValueError: bad record 7"


def test_flat_map_filter_and_process_have_dead_letters_too(tmp_path):
    from barrierflow.datastream.functions import ProcessFunction

    class Halve(ProcessFunction):
        def process_element(self, value, ctx):
            if value % 50 == 0:
                raise ZeroDivisionError(value)
            yield value

    env = env_on_threads(1)
    env.get_checkpoint_config().set_checkpoint_storage(str(tmp_path / "ckpt"))
    tags = [OutputTag(name) for name in ("fm", "f", "p")]
    numbers = env.from_source(NumberSequenceSource(1, 200), "numbers")
    stage1 = numbers.flat_map(lambda v: [v] if v != 13 else 1 / 0).with_dead_letters(tags[0])
    stage2 = stage1.filter(lambda v: v != 21 or 1 / 0).with_dead_letters(tags[1])
    stage3 = stage2.process(Halve()).with_dead_letters(tags[2])
    stage3.map(lambda v: [v]).sink_to(FileSink(str(tmp_path / "out")))
    for stage, tag in zip((stage1, stage2, stage3), tags, strict=True):
        stage.get_side_output(tag).map(as_letter).sink_to(FileSink(str(tmp_path / tag.tag_id)))
    env.execute("every kind")
    assert [r[0] for r in read_committed(str(tmp_path / "fm"))] == [13]
    assert [r[0] for r in read_committed(str(tmp_path / "f"))] == [21]
    assert sorted(r[0] for r in read_committed(str(tmp_path / "p"))) == [50, 100, 150, 200]
    kept = sorted(r[0] for r in read_committed(str(tmp_path / "out")))
    assert kept == [v for v in range(1, 201) if v not in (13, 21, 50, 100, 150, 200)]


def test_dead_letters_nobody_reads_are_refused_before_the_job_runs(tmp_path):
    env = env_on_threads()
    env.from_source(NumberSequenceSource(1, 10), "numbers").map(parse).uid(
        "parse"
    ).with_dead_letters(OutputTag("dead")).sink_to(FileSink(str(tmp_path / "out")))
    with pytest.raises(ConfigurationError, match=r"'parse' .* nothing reads them"):
        env.execute("unread")


def test_only_map_flat_map_filter_and_process_take_dead_letters():
    env = env_on_threads()
    with pytest.raises(ConfigurationError, match="applies to map, flat_map, filter and process"):
        env.from_source(NumberSequenceSource(1, 10), "numbers").with_dead_letters(OutputTag("x"))
