"""``DataStreamUtils.reinterpret_as_keyed_stream``: the edge into the keyed operator is
forward, so the keyed operator chains to the stream's operator and its subtask *i* reads
subtask *i*'s records only; the graph refuses it where the chain cannot form, naming the
operator and why; and the deployed keyed operator is told to check its records' key groups."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from barrierflow.cluster.attempt_deployment import slot_descriptors
from barrierflow.datastream import DataStreamUtils, KeyedStream, StreamExecutionEnvironment
from barrierflow.datastream.connectors.discarding import DiscardingSink
from barrierflow.datastream.connectors.number_seq import NumberSequenceSource
from barrierflow.errors import ConfigurationError
from barrierflow.graph.job_graph import build_job_graph
from barrierflow.graph.transformation import Partitioning
from tests.unit.graph.test_graph import Passthrough, chains, graphs, stream_graph


def reinterpreted_program(parallelism: int = 2, keyed_parallelism: int | None = None):
    env = StreamExecutionEnvironment().set_parallelism(parallelism)
    numbers = env.from_source(NumberSequenceSource(1, 10), "s")
    keyed = DataStreamUtils.reinterpret_as_keyed_stream(numbers, lambda x: x % 3)
    processed = keyed.process(Passthrough()).uid("count")
    if keyed_parallelism is not None:
        processed.set_parallelism(keyed_parallelism)
    return env, numbers, processed


def test_the_keyed_operator_chains_to_the_source_with_no_shuffle():
    env, _, processed = reinterpreted_program()
    processed.sink_to(DiscardingSink())
    job_graph, execution = graphs(env)
    assert chains(job_graph) == [["s", "Passthrough", "DiscardingSink"]]
    assert job_graph.edges == []  # no edge between vertices: nothing serialized or sent
    (node,) = [n for n in job_graph.vertices[0].chain if n.uid == "count"]
    assert node.reinterpreted_input
    (edge,) = node.in_edges
    assert edge.partitioner.kind is Partitioning.FORWARD and edge.partitioner.reinterpreted
    assert edge.partitioner.key_selector(7) == 1
    assert [p.input_channels for p in execution.subtasks] == [(), ()]


def test_the_result_is_a_keyed_stream_with_its_key_type():
    from barrierflow.common import Types

    env = StreamExecutionEnvironment()
    numbers = env.from_source(NumberSequenceSource(1, 10), "s")
    keyed = DataStreamUtils.reinterpret_as_keyed_stream(numbers, str, key_type=Types.STRING())
    assert isinstance(keyed, KeyedStream)
    assert keyed.process(Passthrough()).get_transformation().key_type == Types.STRING()


def test_the_keyed_operator_is_told_to_check_key_groups_and_others_are_not():
    env, _, processed = reinterpreted_program()
    processed.map(str).sink_to(DiscardingSink())
    _, execution = graphs(env)
    plan = SimpleNamespace(
        job_id="j", job_name="job", graph=execution, task_config=None, slot_bind_host=None,
        heartbeat_timeout_s=1.0,
    )  # fmt: skip
    (slot, _) = slot_descriptors(plan, 1, 0, "tcp://x", None, None)  # type: ignore[arg-type]
    checks = {spec.uid: spec.checks_key_groups for spec in slot.tasks[0].chain}
    assert checks["count"] is True
    assert not any(v for uid, v in checks.items() if uid != "count")


def test_another_parallelism_is_refused_naming_the_operator():
    env, _, processed = reinterpreted_program(parallelism=2, keyed_parallelism=3)
    processed.sink_to(DiscardingSink())
    with pytest.raises(ConfigurationError) as e:
        stream_graph(env)
    assert "'count' (Passthrough)" in str(e.value)
    assert "parallelism 3 against 2" in str(e.value)


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (lambda numbers, p: p.start_new_chain(), "start_new_chain() was called on it"),
        (lambda numbers, p: p.disable_chaining(), "disable_chaining() was called on it"),
        (lambda numbers, p: numbers.disable_chaining(), "has chaining disabled"),
        (
            lambda numbers, p: numbers.map(str).sink_to(DiscardingSink()),
            "has 2 consumers, and a chain goes on to one",
        ),
    ],
)
def test_a_chain_that_cannot_form_is_refused_saying_why(change, reason):
    env, numbers, processed = reinterpreted_program()
    processed.sink_to(DiscardingSink())
    change(numbers, processed)
    with pytest.raises(ConfigurationError) as e:
        build_job_graph(stream_graph(env))
    assert "operator 'count' (Passthrough) reads a stream reinterpreted as keyed" in str(e.value)
    assert reason in str(e.value)


def test_a_union_before_it_is_refused():
    env = StreamExecutionEnvironment().set_parallelism(2)
    a = env.from_source(NumberSequenceSource(1, 10), "a")
    b = env.from_source(NumberSequenceSource(1, 10), "b")
    keyed = DataStreamUtils.reinterpret_as_keyed_stream(a.union(b), lambda x: x)
    keyed.process(Passthrough()).uid("count").sink_to(DiscardingSink())
    with pytest.raises(ConfigurationError, match="reads more than one input"):
        build_job_graph(stream_graph(env))


def test_with_chaining_off_the_edge_stays_forward_between_vertices():
    env, _, processed = reinterpreted_program()
    processed.sink_to(DiscardingSink())
    job_graph = build_job_graph(stream_graph(env), chaining=False)
    (edge,) = [e for e in job_graph.edges if e.target.chain[0].uid == "count"]
    assert edge.partitioner.kind is Partitioning.FORWARD and edge.partitioner.reinterpreted


@pytest.mark.parametrize("before", ["key_by", "rebalance"])
def test_a_partitioned_stream_is_refused(before):
    env = StreamExecutionEnvironment()
    numbers = env.from_source(NumberSequenceSource(1, 10), "s")
    partitioned = numbers.key_by(str) if before == "key_by" else numbers.rebalance()
    with pytest.raises(ConfigurationError, match="takes the output of an operator"):
        DataStreamUtils.reinterpret_as_keyed_stream(partitioned, str)


def test_a_key_selector_that_is_no_function_is_refused():
    env = StreamExecutionEnvironment()
    numbers = env.from_source(NumberSequenceSource(1, 10), "s")
    with pytest.raises(ConfigurationError, match=r"reinterpret_as_keyed_stream\(\) needs a"):
        DataStreamUtils.reinterpret_as_keyed_stream(numbers, 3)


def test_a_source_reinterpreted_as_keyed_fixes_its_vertexs_parallelism_and_no_other():
    """Its input was partitioned outside the job, for this parallelism; reinterpreted after a
    key_by in the same vertex, the partitioning is the job's own and follows a rescale."""
    env, _, processed = reinterpreted_program()
    processed.sink_to(DiscardingSink())
    (vertex,) = graphs(env)[0].vertices
    assert vertex.fixed_parallelism is not None
    assert "'Passthrough' reads the output of source 's' reinterpreted" in vertex.fixed_parallelism
    assert "partitioned by key group for parallelism 2" in vertex.fixed_parallelism

    env = StreamExecutionEnvironment().set_parallelism(2)
    keyed = env.from_source(NumberSequenceSource(1, 10), "s").key_by(lambda x: x % 3)
    tagged = keyed.process(Passthrough())
    again = DataStreamUtils.reinterpret_as_keyed_stream(tagged, lambda x: x % 3)
    again.process(Passthrough()).sink_to(DiscardingSink())
    assert [v.fixed_parallelism for v in graphs(env)[0].vertices] == [None, None]
