"""Graph translation: StreamGraph -> JobGraph (chaining) -> ExecutionGraph (subtasks, channels)."""

from __future__ import annotations

import pytest

from barrierflow.datastream import StreamExecutionEnvironment
from barrierflow.datastream.connectors.discarding import DiscardingSink
from barrierflow.datastream.connectors.number_seq import NumberSequenceSource
from barrierflow.datastream.functions.one_input import KeyedProcessFunction
from barrierflow.datastream.functions.two_input import CoMapFunction
from barrierflow.errors import ConfigurationError
from barrierflow.graph.execution_graph import ExecutionGraph, build_execution_graph
from barrierflow.graph.job_graph import JobGraph, build_job_graph
from barrierflow.graph.stream_graph import build_stream_graph
from barrierflow.graph.transformation import Partitioning


class Passthrough(KeyedProcessFunction):
    def process_element(self, value, ctx):
        yield value


def stream_graph(env: StreamExecutionEnvironment):
    return build_stream_graph(
        "job", env._transformations, env.get_parallelism(), env.get_max_parallelism()
    )


def graphs(env: StreamExecutionEnvironment) -> tuple[JobGraph, ExecutionGraph]:
    job_graph = build_job_graph(stream_graph(env))
    return job_graph, build_execution_graph(job_graph)


def keyed_program(parallelism: int = 2, sink_parallelism: int | None = None):
    env = StreamExecutionEnvironment().set_parallelism(parallelism)
    processed = (
        env.from_source(NumberSequenceSource(1, 10), "s")
        .map(lambda x: x * 2)
        .key_by(lambda x: x % 3)
        .process(Passthrough())
    )
    sink = processed.sink_to(DiscardingSink())
    if sink_parallelism is not None:
        sink.set_parallelism(sink_parallelism)
    return env


def chains(job_graph: JobGraph) -> list[list[str]]:
    return [[n.name for n in v.chain] for v in job_graph.vertices]


def plan(execution_graph: ExecutionGraph, vertex_id: str, subtask: int):
    (found,) = [p for p in execution_graph.subtasks if p.id == (vertex_id, subtask)]
    return found


# --- chaining ----------------------------------------------------------------------------------


def test_source_and_map_are_chained_and_key_by_breaks_the_chain():
    job_graph, _ = graphs(keyed_program())
    assert chains(job_graph) == [["s", "Map"], ["Passthrough", "DiscardingSink"]]
    (edge,) = job_graph.edges
    assert edge.source.is_source and not edge.target.is_source
    assert edge.partitioner.kind is Partitioning.KEY_GROUPS
    assert edge.partitioner.key_selector(7) == 1


def test_a_parallelism_change_breaks_the_chain_and_rebalances():
    job_graph, _ = graphs(keyed_program(parallelism=2, sink_parallelism=3))
    assert chains(job_graph) == [["s", "Map"], ["Passthrough"], ["DiscardingSink"]]
    assert [v.parallelism for v in job_graph.vertices] == [2, 2, 3]
    last = job_graph.edges[-1]
    assert (last.source.name, last.target.name) == ("Passthrough", "DiscardingSink")
    assert last.partitioner.kind is Partitioning.REBALANCE
    assert job_graph.num_slots == 3


def test_a_map_with_another_parallelism_than_its_source_is_not_chained():
    env = StreamExecutionEnvironment().set_parallelism(2)
    env.from_source(NumberSequenceSource(1, 10), "s").map(str).set_parallelism(3).sink_to(
        DiscardingSink()
    )
    job_graph, _ = graphs(env)
    assert chains(job_graph) == [["s"], ["Map"], ["DiscardingSink"]]
    assert [e.partitioner.kind for e in job_graph.edges] == [Partitioning.REBALANCE] * 2


def test_an_operator_feeding_two_consumers_is_not_chained_to_them():
    env = StreamExecutionEnvironment().set_parallelism(2)
    doubled = env.from_source(NumberSequenceSource(1, 10), "s").map(lambda x: 2 * x)
    doubled.map(str).sink_to(DiscardingSink())
    doubled.filter(bool).sink_to(DiscardingSink())
    job_graph, _ = graphs(env)
    assert chains(job_graph) == [
        ["s", "Map"],
        ["Map", "DiscardingSink"],
        ["Filter", "DiscardingSink"],
    ]
    assert [e.partitioner.kind for e in job_graph.edges] == [Partitioning.FORWARD] * 2


# --- subtasks and channels -----------------------------------------------------------------------


def test_keyed_edge_gives_each_consumer_one_channel_per_producer_in_producer_order():
    job_graph, execution = graphs(keyed_program(parallelism=3))
    (edge,) = job_graph.edges
    source, target = edge.source.id, edge.target.id
    for i in range(3):
        assert plan(execution, target, i).input_channels == (
            (edge.index, 0),
            (edge.index, 1),
            (edge.index, 2),
        )
        assert plan(execution, source, i).input_channels == ()
        (output,) = plan(execution, source, i).outputs
        # targets ordered by consumer subtask (key groups map to that index); channel = producer
        assert [(t.consumer, t.channel) for t in output.targets] == [
            ((target, j), i) for j in range(3)
        ]
    assert len(execution.subtasks) == 6
    assert execution.source_subtasks == [(source, i) for i in range(3)]


def test_rebalance_edge_connects_every_producer_to_every_consumer():
    job_graph, execution = graphs(keyed_program(parallelism=2, sink_parallelism=3))
    middle, sink = job_graph.vertices[1].id, job_graph.vertices[2].id
    for j in range(3):
        assert len(plan(execution, sink, j).input_channels) == 2
    for i in range(2):
        (output,) = plan(execution, middle, i).outputs
        assert [t.consumer for t in output.targets] == [(sink, j) for j in range(3)]
        assert {t.channel for t in output.targets} == {i}
    assert [len(execution.in_slot(s)) for s in range(3)] == [3, 3, 1]


def test_forward_edges_connect_equal_subtask_indexes_only():
    env = StreamExecutionEnvironment().set_parallelism(3)
    doubled = env.from_source(NumberSequenceSource(1, 10), "s").map(lambda x: 2 * x)
    doubled.map(str).sink_to(DiscardingSink())
    doubled.filter(bool).sink_to(DiscardingSink())
    job_graph, execution = graphs(env)
    for edge in job_graph.edges:
        assert edge.partitioner.kind is Partitioning.FORWARD
        for i in range(3):
            assert plan(execution, edge.target.id, i).input_channels == ((edge.index, i),)
            (output,) = [
                o for o in plan(execution, edge.source.id, i).outputs if o.edge == edge.index
            ]
            assert [(t.consumer, t.channel) for t in output.targets] == [((edge.target.id, i), 0)]


def test_union_of_two_sources_gives_the_consumer_channels_of_both_edges():
    env = StreamExecutionEnvironment().set_parallelism(2)
    a = env.from_source(NumberSequenceSource(1, 10), "a")
    b = env.from_source(NumberSequenceSource(11, 20), "b").set_parallelism(1)
    a.union(b).map(str).sink_to(DiscardingSink())
    job_graph, execution = graphs(env)
    assert chains(job_graph) == [["a"], ["b"], ["Map", "DiscardingSink"]]
    consumer = job_graph.vertices[2].id
    edge_a, edge_b = job_graph.edges
    assert edge_a.partitioner.kind is Partitioning.FORWARD
    assert edge_b.partitioner.kind is Partitioning.REBALANCE
    assert plan(execution, consumer, 0).input_channels == ((edge_a.index, 0), (edge_b.index, 0))
    assert plan(execution, consumer, 1).input_channels == ((edge_a.index, 1), (edge_b.index, 0))


class Either(CoMapFunction):
    def map1(self, value):
        return value

    def map2(self, value):
        return value


def test_a_two_input_operator_heads_its_vertex_and_knows_the_input_of_each_channel():
    """Input 1 a union of two sources (one forward, one partitioned by a custom partitioner;
    a union of a keyed stream reads it through a map of its own, as PyFlink's), input 2 a
    broadcast one."""
    env = StreamExecutionEnvironment().set_parallelism(2)
    a = env.from_source(NumberSequenceSource(1, 10), "a")
    b = env.from_source(NumberSequenceSource(11, 20), "b").set_parallelism(1)
    c = env.from_source(NumberSequenceSource(21, 30), "c")
    partitioned = b.partition_custom(lambda key, n: key % n, lambda v: v)
    joined = a.union(partitioned).connect(c.broadcast()).map(Either())
    joined.sink_to(DiscardingSink())
    job_graph, execution = graphs(env)
    assert chains(job_graph) == [["a"], ["b"], ["c"], ["Either", "DiscardingSink"]]
    head = job_graph.vertices[3]
    assert head.takes_two_inputs and not job_graph.vertices[0].takes_two_inputs
    assert [(e.source.chain[0].name, e.input) for e in job_graph.inputs_of(head)] == [
        ("a", 0), ("b", 0), ("c", 1)
    ]  # fmt: skip
    for subtask in (0, 1):
        consumer = plan(execution, head.id, subtask)
        inputs = {e.index: e.input for e in job_graph.edges}
        assert consumer.input_of_channel == tuple(inputs[e] for e, _ in consumer.input_channels)
        assert consumer.input_of_channel == (0, 0, 1, 1)  # c broadcasts from both subtasks
    assert [plan(execution, v.id, 0).outputs[0].input for v in job_graph.vertices[:3]] == [0, 0, 1]


# --- uids and validation -------------------------------------------------------------------------


def test_operators_without_uid_get_the_same_uids_in_every_build_of_the_program():
    first = [n.uid for n in stream_graph(keyed_program()).nodes]
    second = [n.uid for n in stream_graph(keyed_program()).nodes]
    assert first == second
    assert len(set(first)) == len(first)


def test_a_job_without_a_sink_is_rejected_with_a_hint():
    env = StreamExecutionEnvironment()
    env.from_source(NumberSequenceSource(1, 10), "s").map(str)
    with pytest.raises(ConfigurationError, match=r"no sink.*sink_to\(\.\.\.\)"):
        stream_graph(env)


def test_duplicate_uids_are_rejected_naming_the_uid_and_both_operators():
    env = StreamExecutionEnvironment()
    env.from_source(NumberSequenceSource(1, 10), "s").uid("same").map(str).name("Stringify").uid(
        "same"
    ).sink_to(DiscardingSink())
    with pytest.raises(
        ConfigurationError, match=r"uid 'same' is used by two operators \(s and Stringify\)"
    ):
        stream_graph(env)


def test_a_parallelism_above_the_max_parallelism_is_rejected():
    env = StreamExecutionEnvironment().set_max_parallelism(4)
    env.from_source(NumberSequenceSource(1, 10), "s").map(str).set_parallelism(5).uid("m").sink_to(
        DiscardingSink()
    )
    with pytest.raises(
        ConfigurationError, match=r"'m' has parallelism 5, above the max parallelism 4"
    ):
        stream_graph(env)


def test_set_parallelism_after_key_by_is_rejected():
    env = StreamExecutionEnvironment()
    keyed = env.from_source(NumberSequenceSource(1, 10), "s").key_by(lambda x: x)
    with pytest.raises(ConfigurationError, match=r"set_parallelism\(\) applies to an operator"):
        keyed.set_parallelism(2)
