"""Dead letters under a SIGKILLed task on Spark: the records a map fails on go to the dead
letters, the others through a keyed running sum to the output (from one source subtask, so that
each key's sums come out the same in every run), and a task process killed in the middle
changes nothing: both committed outputs equal a failure-free run's, record by record."""

from __future__ import annotations

import pytest

from barrierflow.common import RestartStrategies
from barrierflow.datastream import OutputTag, StreamExecutionEnvironment
from barrierflow.datastream.connectors.file_system import FileSink
from barrierflow.datastream.connectors.number_seq import NumberSequenceSource
from tests.jobs import odd_even

pytestmark = [pytest.mark.spark, pytest.mark.faults]

N = 8000


def parse(value: int) -> int:
    if value % 997 == 0:
        raise ValueError(f"bad record {value}")
    return value


def as_letter(letter) -> list:
    return [letter.record, letter.operator, letter.error]


def _run(tmp_path, name: str, kill: bool) -> tuple[list, list]:
    base = tmp_path / name
    fault = (
        odd_even.Fault("kill", N // 2, str(base / "fired"), str(base / "ckpt")) if kill else None
    )
    env = StreamExecutionEnvironment().set_parallelism(2)
    env.enable_checkpointing(100)
    env.get_checkpoint_config().set_checkpoint_storage(str(base / "ckpt"))
    env.set_restart_strategy(RestartStrategies.fixed_delay_restart(3, 200))
    env.set_max_parallelism(odd_even.MAX_PARALLELISM)
    letters = OutputTag("dead")
    # one source subtask: each key's records reach the sum in one order, so its sums are the
    # same in every run, and two runs compare record by record
    source = env.from_source(NumberSequenceSource(1, N), "numbers").set_parallelism(1)
    numbers = source.map(odd_even.Throttle(0.0003, fault)).set_parallelism(1)
    parsed = numbers.map(parse).uid("parse").set_parallelism(1).with_dead_letters(letters)
    parsed.key_by(lambda x: x % 2).process(odd_even.RunningSum()).uid("sum").sink_to(
        FileSink(str(base / "out"))
    )
    parsed.get_side_output(letters).map(as_letter).sink_to(FileSink(str(base / "dead")))
    result = env.execute(name)
    if kill:
        assert result.attempts == 2, "the kill did not fire"
    return (
        sorted(odd_even.read_committed(str(base / "out"))),
        sorted(odd_even.read_committed(str(base / "dead"))),
    )


def test_a_killed_task_changes_neither_the_output_nor_the_dead_letters(spark, tmp_path):
    golden_out, golden_dead = _run(tmp_path, "golden", kill=False)
    out, dead = _run(tmp_path, "killed", kill=True)
    assert [d[0] for d in golden_dead] == [v for v in range(1, N + 1) if v % 997 == 0]
    assert len(golden_out) == N - len(golden_dead)
    assert out == golden_out
    assert dead == golden_dead
