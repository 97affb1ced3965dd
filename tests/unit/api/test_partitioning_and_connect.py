"""PyFlink's partitioning, chaining controls, connect and broadcast state, without Spark: the
graphs the API builds, where each partitioner sends records, the broadcast state's snapshot and
its restore at any parallelism, and the errors a wrong program gets."""

from __future__ import annotations

import pickle
from collections import Counter

import pytest

from barrierflow.common import Types
from barrierflow.datastream import StreamExecutionEnvironment
from barrierflow.datastream.connectors.discarding import DiscardingSink
from barrierflow.datastream.connectors.number_seq import NumberSequenceSource
from barrierflow.datastream.functions import (
    BroadcastProcessFunction,
    CoMapFunction,
    KeyedCoProcessFunction,
    Partitioner,
)
from barrierflow.datastream.state import MapStateDescriptor
from barrierflow.errors import ConfigurationError
from barrierflow.graph.execution_graph import build_execution_graph, rescale_producers
from barrierflow.graph.job_graph import build_job_graph
from barrierflow.graph.timestamp_use import TimestampColumn
from barrierflow.graph.transformation import PartitionerSpec, Partitioning, TransformationKind
from barrierflow.protocol.key_group_range import subtask_for_key_group
from barrierflow.protocol.record_batch import RecordBatch
from barrierflow.runtime.network.output import RecordRoutingError, ResultPartition
from barrierflow.state.broadcast_state import BroadcastStateStore
from barrierflow.state.key_groups import as_key, assign_to_key_group
from tests.unit.graph.test_graph import chains, stream_graph


class Sent:
    backlogged = False

    def __init__(self):
        self.records = []

    def send_buffer(self, payload):
        self.records += pickle.loads(payload)


def routed(spec: PartitionerSpec, records: list, channels: int = 3) -> list[list]:
    sent = [Sent() for _ in range(channels)]
    partition = ResultPartition(spec, sent, 1024, 128, "the next operator")
    partition.emit(RecordBatch(records))
    partition.flush()
    return [s.records for s in sent]


# --- where records go --------------------------------------------------------------------------


def test_restored_records_are_routed_again_but_not_selected_again():
    """An unaligned checkpoint's output channel state holds an edge's records as they were
    sent: a side output's values, no longer wrapped, which a second selection would drop."""
    sent = [Sent() for _ in range(3)]
    late = PartitionerSpec(Partitioning.BROADCAST, side_output="late")
    partition = ResultPartition(late, sent, 1024, 128, "the next operator")
    partition.emit_restored(RecordBatch([1, 2]))
    partition.emit_restored(RecordBatch([3]), channels=[2])
    partition.flush()
    assert [s.records for s in sent] == [[1, 2], [1, 2], [1, 2, 3]]


def test_an_edge_whose_consumer_reads_no_timestamps_leaves_the_column_out():
    sent = [Sent()]
    partition = ResultPartition(
        PartitionerSpec(Partitioning.FORWARD), sent, 1024, 128, "the next operator",
        timestamps=TimestampColumn.DROPPED,
    )  # fmt: skip
    partition.emit(RecordBatch([1, 2], [10, 20]))
    partition.flush()
    assert sent[0].records == [1, 2]  # a plain buffer, not (records, timestamps)


def test_broadcast_sends_every_record_to_every_channel():
    assert routed(PartitionerSpec(Partitioning.BROADCAST), [1, 2, 3]) == [[1, 2, 3]] * 3


def test_shuffle_loses_and_repeats_nothing_and_uses_every_channel():
    out = routed(PartitionerSpec(Partitioning.SHUFFLE), list(range(3000)))
    assert sorted(r for channel in out for r in channel) == list(range(3000))
    assert all(len(channel) > 800 for channel in out)  # 1000 expected each


class ByParity(Partitioner):
    def partition(self, key, num_partitions):
        return key % 2


def test_a_custom_partitioner_picks_the_channel_of_each_key():
    spec = PartitionerSpec(Partitioning.CUSTOM, lambda r: r[0], partition=ByParity().partition)
    assert routed(spec, [(1, "a"), (2, "b"), (3, "c")]) == [[(2, "b")], [(1, "a"), (3, "c")], []]


def test_a_custom_partitioner_out_of_range_names_the_record_and_the_key():
    spec = PartitionerSpec(Partitioning.CUSTOM, lambda r: r, partition=lambda key, n: n)
    with pytest.raises(RecordRoutingError, match=r"record 7.*returned 3 for key 7.*0 to 2"):
        routed(spec, [7])


def by_key_group(records: list, timestamps: list | None = None) -> list[list]:
    """Where ``key_by(lambda r: r[0])`` routes ``records``, by each record's key group alone."""
    channels = 3
    owner = [subtask_for_key_group(128, channels, kg) for kg in range(128)]
    out: list[list] = [[] for _ in range(channels)]
    for i, record in enumerate(records):
        key = record[0]
        out[owner[assign_to_key_group(as_key(key), 128)]].append(
            record if timestamps is None else (record, timestamps[i])
        )
    return out


def routed_by_key(records: list, timestamps: list | None = None) -> list[list]:
    sent = [Sent() for _ in range(3)]
    partition = ResultPartition(
        PartitionerSpec(Partitioning.KEY_GROUPS, lambda r: r[0]),
        sent,
        1024,
        128,
        "the next operator",
    )
    partition.emit(RecordBatch(records, timestamps))
    partition.flush()
    if timestamps is None:
        return [s.records for s in sent]
    return [list(zip(*s.records, strict=True)) if s.records else [] for s in sent]


# Keys memoized and looked up in C, a list key (unhashable: the lookup fails) in the middle of
# a batch, and keys after it: every record once, on its key group's channel, in order.
MIXED_KEYS = [(k, i) for i, k in enumerate([5, "a", 5, [1, 2], 7, "a", [1, 2], (3, 4), 9])]


def test_key_by_routes_each_record_once_to_its_key_groups_channel_whatever_the_keys():
    assert routed_by_key(MIXED_KEYS) == by_key_group(MIXED_KEYS)
    assert routed_by_key(MIXED_KEYS * 50) == by_key_group(MIXED_KEYS * 50)


def test_key_by_keeps_each_records_timestamp_past_a_list_key():
    stamps = [1000 + i for i in range(len(MIXED_KEYS))]
    assert routed_by_key(MIXED_KEYS, stamps) == by_key_group(MIXED_KEYS, stamps)


def test_a_key_selector_that_fails_names_its_record_and_routes_none_twice():
    sent = [Sent() for _ in range(3)]
    spec = PartitionerSpec(Partitioning.KEY_GROUPS, lambda r: r[0])
    partition = ResultPartition(spec, sent, 1024, 128, "the count")
    with pytest.raises(RecordRoutingError, match=r"before the count failed on record 7: "):
        partition.emit(RecordBatch([(1,), (2,), 7, (3,)]))
    partition.flush()
    assert sorted(r for s in sent for r in s.records) == [(1,), (2,)]


def test_an_unhashable_key_names_its_record():
    with pytest.raises(RecordRoutingError, match=r"record \(\{'a': 1\},\).*not hashable"):
        routed_by_key([(1,), ({"a": 1},)])


@pytest.mark.parametrize(("producers", "consumers"), [(2, 4), (4, 2), (3, 5), (5, 3), (2, 2)])
def test_rescale_connects_each_consumer_to_a_local_share_and_every_producer_somewhere(
    producers, consumers
):
    fed = [rescale_producers(producers, consumers, c) for c in range(consumers)]
    assert all(fed), "every consumer has a producer"
    assert sorted({p for ps in fed for p in ps}) == list(range(producers))
    assert sum(len(ps) for ps in fed) == max(producers, consumers)  # no all-to-all


def test_rescale_in_the_execution_graph_gives_each_consumer_its_share_only():
    env = StreamExecutionEnvironment().set_parallelism(4)
    env.from_source(NumberSequenceSource(1, 10), "s").set_parallelism(2).rescale().map(
        lambda v: v
    ).sink_to(DiscardingSink())
    graph = build_execution_graph(build_job_graph(stream_graph(env)))
    maps = [p for p in graph.subtasks if p.vertex.chain[0].name == "Map"]
    assert [[producer for _, producer in p.input_channels] for p in maps] == [[0], [0], [1], [1]]


# --- chaining and forward ---------------------------------------------------------------------


def program(configure) -> list[list[str]]:
    env = StreamExecutionEnvironment()
    stream = env.from_source(NumberSequenceSource(1, 10), "s").map(lambda v: v).name("a")
    configure(stream.map(lambda v: v).name("b")).map(lambda v: v).name("c").sink_to(
        DiscardingSink()
    ).name("sink")
    return chains(build_job_graph(stream_graph(env)))


def test_start_new_chain_and_disable_chaining_cut_the_chains_where_flink_does():
    assert program(lambda s: s) == [["s", "a", "b", "c", "sink"]]
    assert program(lambda s: s.start_new_chain()) == [["s", "a"], ["b", "c", "sink"]]
    assert program(lambda s: s.disable_chaining()) == [["s", "a"], ["b"], ["c", "sink"]]
    assert program(lambda s: s.slot_sharing_group("other")) == [["s", "a", "b", "c", "sink"]]


def test_forward_to_another_parallelism_is_refused_naming_both_operators():
    env = StreamExecutionEnvironment().set_parallelism(2)
    env.from_collection([1]).map(lambda v: v).name("m").forward().map(lambda v: v).name(
        "n"
    ).set_parallelism(3).sink_to(DiscardingSink())
    with pytest.raises(ConfigurationError, match=r"forward\(\) between 'm' .* and 'n'"):
        stream_graph(env)


def test_a_keyed_stream_cannot_be_partitioned_again():
    keyed = StreamExecutionEnvironment().from_collection([1]).key_by(lambda v: v)
    for method in ("shuffle", "rebalance", "rescale", "forward", "broadcast"):
        with pytest.raises(ConfigurationError, match="partitioned by key"):
            getattr(keyed, method)()


# --- connect ----------------------------------------------------------------------------------


class Both(CoMapFunction):
    def map1(self, value):
        return value

    def map2(self, value):
        return value


def test_connect_keys_each_input_by_its_own_selector_on_the_edge_of_that_input():
    env = StreamExecutionEnvironment().set_parallelism(2)
    a = env.from_collection([1, 2])
    b = env.from_collection(["x"])
    joined = a.key_by(lambda v: v).connect(b.key_by(len)).process(Pair())
    joined.sink_to(DiscardingSink())
    graph = stream_graph(env)
    (node,) = [n for n in graph.nodes if n.name == "Pair"]
    assert node.takes_two_inputs and node.kind is TransformationKind.CO_PROCESS
    assert [e.partitioner.kind for e in node.in_edges] == [Partitioning.KEY_GROUPS] * 2
    assert [e.input for e in node.in_edges] == [0, 1]
    selectors = [e.partitioner.key_selector for e in node.in_edges]
    assert [selectors[0](7), selectors[1]("abc")] == [7, 3]
    assert node.key_selector(7) == 7 and node.key_selector2("abc") == 3
    assert [e.source.name for e in node.in_edges] == ["Collection Source"] * 2  # no tagging map


def test_connect_keeps_the_uids_of_operators_without_one_that_tagging_maps_gave():
    """Before connect had two inputs, a map tagged each input: the operators after it are
    named by positions that counted those maps, and their savepoints by those names."""
    env = StreamExecutionEnvironment()
    a = env.from_collection([1])
    connected = a.connect(env.from_collection([2])).map(Both())
    connected.map(lambda v: v).sink_to(DiscardingSink())
    uids = [n.uid for n in stream_graph(env).nodes]
    assert uids == ["source-0", "source-1", "process-4", "map-5", "sink-6"]


class Pair(KeyedCoProcessFunction):
    def process_element1(self, value, ctx):
        yield value

    def process_element2(self, value, ctx):
        yield value


def test_connect_refuses_functions_without_a_method_per_input():
    env = StreamExecutionEnvironment()
    connected = env.from_collection([1]).connect(env.from_collection([2]))
    with pytest.raises(ConfigurationError, match=r"CoMapFunction.*no map2"):
        connected.map(type("OnlyOne", (), {"map1": lambda self, v: v})())
    with pytest.raises(ConfigurationError, match="same environment"):
        env.from_collection([1]).connect(StreamExecutionEnvironment().from_collection([2]))
    connected.map(Both(), output_type=Types.INT())  # the right one is taken


class Rules(BroadcastProcessFunction):
    def process_element(self, value, ctx):
        yield value

    def process_broadcast_element(self, value, ctx):
        pass


def test_broadcast_needs_map_state_descriptors_with_distinct_names():
    env = StreamExecutionEnvironment()
    stream = env.from_collection([1])
    with pytest.raises(ConfigurationError, match="MapStateDescriptors"):
        stream.broadcast("rules")
    d = MapStateDescriptor("rules", Types.STRING(), Types.INT())
    with pytest.raises(ConfigurationError, match="repeated"):
        stream.broadcast(d, MapStateDescriptor("rules"))
    out = env.from_collection([2]).connect(stream.broadcast(d)).process(Rules())
    out.sink_to(DiscardingSink())
    (node,) = [n for n in stream_graph(env).nodes if n.name == "Rules"]
    kinds = Counter(e.partitioner.kind for e in node.in_edges)
    assert kinds == Counter([Partitioning.FORWARD, Partitioning.BROADCAST])
    assert node.function.state_names == ("rules",)


# --- broadcast state --------------------------------------------------------------------------

RULES = MapStateDescriptor("rules")


def test_broadcast_state_is_read_only_where_the_subtasks_could_diverge():
    store = BroadcastStateStore(["rules"])
    store.state(RULES).put("a", 1)
    view = store.read_only(RULES)
    assert view.get("a") == 1 and view.contains("a") and list(view.items()) == [("a", 1)]
    for change in (lambda: view.put("b", 2), view.clear, lambda: view.remove("a")):
        with pytest.raises(RuntimeError, match="read-only in process_element"):
            change()
    with pytest.raises(KeyError, match=r"no broadcast state 'other'.*rules"):
        store.state(MapStateDescriptor("other"))


@pytest.mark.parametrize("new_parallelism", [1, 2, 3, 5])
def test_a_snapshot_restores_the_same_state_into_every_subtask_at_any_parallelism(
    new_parallelism,
):
    old = []
    for _ in range(2):  # two subtasks, holding the same state
        store = BroadcastStateStore(["rules"])
        store.state(RULES).put_all({"a": 1, ("b", 2): [3]})
        old.append(store.snapshot())
    for subtask in range(new_parallelism):
        restored = BroadcastStateStore(["rules"])
        restored.restore(old, subtask, new_parallelism)
        assert dict(restored.state(RULES).items()) == {"a": 1, ("b", 2): [3]}
    missing = BroadcastStateStore(["rules"])
    missing.restore([None, old[1]], 0, 1)  # a subtask without a snapshot: another's copy
    assert missing.read_only(RULES).get("a") == 1
