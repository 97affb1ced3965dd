"""A program may execute a stream, then extend the same stream and execute again, as PyFlink
allows (its ``basic_operations.py`` example does): the second job reads from the streams
declared before and runs only the sinks declared since."""

from __future__ import annotations

from barrierflow.client.planning import plan_job
from barrierflow.datastream import StreamExecutionEnvironment
from barrierflow.datastream.connectors.discarding import DiscardingSink
from barrierflow.graph.transformation import TransformationKind


def _nodes(env: StreamExecutionEnvironment, job: str) -> list:
    vertices = plan_job(env._pipeline(job)).graph.job_graph.vertices
    return [node for vertex in vertices for node in vertex.chain]


def _names(env: StreamExecutionEnvironment, job: str) -> list[str]:
    return [node.name for node in _nodes(env, job)]


def test_a_second_execute_reads_the_streams_of_the_first_and_runs_only_its_own_sinks():
    env = StreamExecutionEnvironment()
    numbers = env.from_collection([1, 2, 3])
    numbers.map(lambda x: x + 1).name("plus one").sink_to(DiscardingSink()).name("first sink")
    assert _names(env, "first") == ["Collection Source", "plus one", "first sink"]
    env._end_job()

    numbers.filter(lambda x: x > 1).name("above one").sink_to(DiscardingSink()).name("second")
    assert _names(env, "second") == ["Collection Source", "above one", "second"]


def test_operators_without_a_uid_keep_their_position_in_the_program_in_a_later_job():
    env = StreamExecutionEnvironment()
    numbers = env.from_collection([1, 2, 3])
    numbers.sink_to(DiscardingSink())
    first = {n.name: n.uid for n in _nodes(env, "first")}
    env._end_job()
    numbers.map(str).sink_to(DiscardingSink())
    second = {n.name: n.uid for n in _nodes(env, "second")}
    assert second["Collection Source"] == first["Collection Source"]


def test_a_later_job_is_batch_by_its_own_sources_only():
    env = StreamExecutionEnvironment()
    env.set_runtime_mode("AUTOMATIC")
    env.from_collection([1]).sink_to(DiscardingSink())
    env._end_job()
    env.from_collection([2]).sink_to(DiscardingSink())
    pipeline = env._pipeline("second")
    assert pipeline.is_batch()
    kinds = [t.kind for t in pipeline.reach()]
    assert kinds == [TransformationKind.SOURCE, TransformationKind.SINK]
