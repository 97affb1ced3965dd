"""Side outputs: the graph gives a consumed tag its own edge (never chained), the producer
emits only consumed tags, the edge selects its tag's values and the producer's other edges
leave them out; a window's late records and a process function's ctx.output go there."""

from __future__ import annotations

import pickle

from barrierflow.common import Types
from barrierflow.datastream import OutputTag, StreamExecutionEnvironment
from barrierflow.datastream.connectors.discarding import DiscardingSink
from barrierflow.datastream.functions.one_input import KeyedProcessFunction
from barrierflow.datastream.output_tag import SideOutput
from barrierflow.eventtime.watermark_valve import MAX_WATERMARK
from barrierflow.graph.job_graph import build_job_graph
from barrierflow.graph.stream_graph import build_stream_graph
from barrierflow.graph.transformation import PartitionerSpec, Partitioning, TransformationKind
from barrierflow.protocol.record_batch import RecordBatch
from barrierflow.runtime.network.output import ResultPartition
from barrierflow.runtime.operators import OperatorSpec
from barrierflow.testing.harness import OperatorHarness
from barrierflow.windowing.window_assigners import TumblingEventTimeWindows
from barrierflow.windowing.window_spec import Contents, WindowSpec
from barrierflow.windowing.window_triggers import EventTimeTrigger

ODD = OutputTag("odd")


class SplitOdd(KeyedProcessFunction):
    def process_element(self, value, ctx):
        if value % 2:
            ctx.output(ODD, value)
        else:
            yield value


def test_a_consumed_side_output_gets_its_own_edge_and_breaks_the_chain():
    env = StreamExecutionEnvironment()
    split = env.from_collection([1, 2]).key_by(lambda v: v).process(SplitOdd()).uid("split")
    split.map(lambda v: v).uid("evens").sink_to(DiscardingSink())
    split.get_side_output(ODD).map(lambda v: v).uid("odds").sink_to(DiscardingSink())
    graph = build_stream_graph("j", env._transformations, 1, 128)
    (node,) = [n for n in graph.nodes if n.uid == "split"]
    assert node.side_outputs == {"odd"}
    assert sorted(str(e.partitioner.side_output) for e in node.out_edges) == ["None", "odd"]
    chains = [[n.uid for n in v.chain] for v in build_job_graph(graph).vertices]
    assert not any("split" in c and ("odds" in c or "evens" in c) for c in chains)


class Sent:
    backlogged = False

    def __init__(self):
        self.buffers = []

    def send_buffer(self, payload):
        import pickle

        self.buffers.append(pickle.loads(payload))


def partition(side_output=None, drop=False):
    channel = Sent()
    spec = PartitionerSpec(Partitioning.FORWARD, side_output=side_output)
    return ResultPartition(spec, [channel], 1024, 128, "op", drop_side_outputs=drop), channel


def test_an_edge_takes_its_side_output_and_the_others_leave_it_out():
    records = [1, SideOutput("odd", 3), SideOutput("late", 5), 2]
    side, side_channel = partition("odd")
    main, main_channel = partition(drop=True)
    for p in (side, main):
        p.emit(RecordBatch(records))
        p.emit(RecordBatch(records, [10, 30, 50, 20]))
        p.flush()
    assert side_channel.buffers == [([3, 3], [-(2**63), 30])]
    assert main_channel.buffers == [([1, 2, 1, 2], [-(2**63), -(2**63), 10, 20])]


def test_a_process_function_sends_to_a_consumed_tag_and_nothing_to_another():
    consumed = OperatorSpec("split", "split", TransformationKind.PROCESS, SplitOdd(),
                            lambda v: v, frozenset({"odd"}))  # fmt: skip
    out = OperatorHarness(consumed).process_timed([1, 2, 3], [100, 200, 300])
    assert out == ([2, SideOutput("odd", 1), SideOutput("odd", 3)], [200, 100, 300])
    unconsumed = OperatorSpec("split", "split", TransformationKind.PROCESS, SplitOdd(),
                              lambda v: v)  # fmt: skip
    assert OperatorHarness(unconsumed).process([1, 2, 3]) == [2]


def test_a_windows_late_records_go_to_its_late_data_side_output():
    spec = WindowSpec(TumblingEventTimeWindows.of(10), EventTimeTrigger(), Contents.REDUCE,
                      lambda a, b: a + b, late_data_tag="late")  # fmt: skip
    h = OperatorHarness(OperatorSpec("w", "w", TransformationKind.WINDOW, spec, lambda v: 0,
                                     frozenset({"late"})))  # fmt: skip
    h.process_timed([1], [5])
    assert h.watermark(20) == ([1], [9])
    assert h.process_timed([7, 8], [3, 25]) == ([SideOutput("late", 7)], [3])
    assert h.watermark(MAX_WATERMARK) == ([8], [29])
    assert h.operator.late_records_dropped == 0


def test_an_unpickled_tag_is_made_through_its_constructor_so_operators_look_for_pairs(monkeypatch):
    """Operators skip looking for ``(tag, value)`` pairs until the process made a tag; a tag
    that reaches an executor pickled inside a function must count as made there."""
    shipped = pickle.dumps(SplitOdd().__dict__ | {"tag": OutputTag("late", Types.LONG())})
    monkeypatch.setattr(OutputTag, "made", False)
    tag = pickle.loads(shipped)["tag"]
    assert OutputTag.made
    assert tag == OutputTag("late") and repr(tag.type_info) == repr(Types.LONG())
