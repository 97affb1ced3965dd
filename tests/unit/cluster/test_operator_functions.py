"""One function object passed to two operators: each operator gets its own, as in PyFlink
(``tests/compat/programs/shared_function.py`` compares the printed sums with PyFlink's).
Shared, the second operator's ``open`` pointed both at its keyed state."""

from __future__ import annotations

from barrierflow import CheckpointingMode, StreamExecutionEnvironment
from barrierflow.cluster.job_master import JobMaster
from barrierflow.cluster.job_plan import NO_REST_SERVER
from barrierflow.cluster.operator_functions import own_functions
from barrierflow.common import Time
from barrierflow.connectors import FileSink, SequenceSource
from barrierflow.graph.stream_graph import StreamNode
from barrierflow.graph.transformation import TransformationKind
from barrierflow.testing.thread_deployer import ThreadDeployer
from barrierflow.windowing.assigners import TumblingEventTimeWindows
from barrierflow.windowing.triggers import EventTimeTrigger
from barrierflow.windowing.window_spec import Contents, WindowSpec
from tests.jobs.odd_even import RunningSum, read_committed

N = 2_000
OPENED: list[int] = []  # the id of the function object each operator opened


class RecordedRunningSum(RunningSum):
    def open(self, runtime_context):
        OPENED.append(id(self))
        super().open(runtime_context)


def _node(uid: str, function: object) -> StreamNode:
    return StreamNode(0, TransformationKind.MAP, uid, uid, 1, function)


def test_only_an_operator_whose_function_an_earlier_one_uses_gets_a_copy():
    shared, alone = RunningSum(), RunningSum()
    reduce = RunningSum()
    window = WindowSpec(TumblingEventTimeWindows.of(Time.seconds(1)), EventTimeTrigger(),
                        Contents.REDUCE, reduce)  # fmt: skip
    functions = own_functions(
        [_node("a", shared), _node("b", shared), _node("c", alone), _node("d", reduce),
         _node("e", window)]
    )  # fmt: skip
    assert functions["a"] is shared and functions["c"] is alone and functions["d"] is reduce
    assert functions["b"] is not shared and type(functions["b"]) is RunningSum
    copied = functions["e"]  # the window's function is the one "d" uses: the window is copied
    assert copied is not window and copied.function is not reduce
    assert type(copied.function) is RunningSum and copied.assigner.size == window.assigner.size


def test_two_operators_given_one_function_object_keep_sums_of_their_own(tmp_path):
    out = str(tmp_path / "out")
    env = StreamExecutionEnvironment().set_parallelism(1)
    env.enable_checkpointing(50, CheckpointingMode.EXACTLY_ONCE)
    env.get_checkpoint_config().set_checkpoint_storage(str(tmp_path / "checkpoints"))
    running_sum = RecordedRunningSum()
    numbers = env.from_source(SequenceSource(1, N), "numbers")
    by_two = numbers.key_by(lambda x: x % 2).process(running_sum).uid("two")
    by_three = numbers.key_by(lambda x: x % 3).process(running_sum).uid("three")
    by_two.map(lambda r: [2, *r]).union(by_three.map(lambda r: [3, *r])).add_sink(FileSink(out))
    plan = env._plan("shared-function")
    plan.rest = NO_REST_SERVER
    OPENED.clear()
    JobMaster(plan, ThreadDeployer()).run()

    assert len(OPENED) == 2 and OPENED[0] != OPENED[1]

    final: dict[tuple[int, int], int] = {}  # the last sum of each key of each operator
    for modulus, key, _, total in sorted(read_committed(out), key=lambda r: r[3]):
        final[(modulus, key)] = total
    expected = {
        (m, k): sum(v for v in range(1, N + 1) if v % m == k) for m in (2, 3) for k in range(m)
    }
    assert final == expected
