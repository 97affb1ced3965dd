"""The in-process deployer gives each subtask its own user functions, as Spark's tasks and
Flink's subtasks get theirs. Shared, two subtasks of a keyed function that keeps its state
handle in ``self`` wrote into the state of whichever opened last, under its current key: the
sums came out wrong, and a checkpoint taken before that subtask saw a record failed on a key
outside its key groups."""

from __future__ import annotations

from collections import defaultdict

from barrierflow.client.planning import plan_job
from barrierflow.cluster.job_master import JobMaster
from barrierflow.cluster.job_plan import NO_REST_SERVER
from barrierflow.common import RestartStrategies
from barrierflow.datastream import CheckpointingMode, StreamExecutionEnvironment
from barrierflow.datastream.connectors.file_system import FileSink
from barrierflow.datastream.connectors.number_seq import NumberSequenceSource
from barrierflow.protocol.key_group_range import subtask_for_key_group
from barrierflow.state.key_groups import assign_to_key_group
from barrierflow.testing.thread_deployer import ThreadDeployer
from tests.jobs.odd_even import RunningSum, read_committed

N, KEYS, PARALLELISM, MAX_PARALLELISM = 3_000, 10, 2, 128
OPENED: list[tuple[int, int]] = []  # (subtask, id of the function object it opened)


class RecordedRunningSum(RunningSum):
    def open(self, runtime_context):
        OPENED.append((runtime_context.get_index_of_this_subtask(), id(self)))
        super().open(runtime_context)


def test_each_subtask_runs_its_own_copy_of_a_keyed_function(tmp_path):
    owners = {
        subtask_for_key_group(MAX_PARALLELISM, PARALLELISM, assign_to_key_group(k, MAX_PARALLELISM))
        for k in range(KEYS)
    }
    assert owners == {0, 1}  # both subtasks have keys: a shared function would mix them
    env = StreamExecutionEnvironment().set_parallelism(PARALLELISM)
    env.set_max_parallelism(MAX_PARALLELISM)
    env.enable_checkpointing(50, CheckpointingMode.EXACTLY_ONCE)
    env.get_checkpoint_config().set_checkpoint_storage(str(tmp_path / "checkpoints"))
    env.set_restart_strategy(RestartStrategies.no_restart())  # a failure shows as itself
    out = str(tmp_path / "out")
    (
        env.from_source(NumberSequenceSource(1, N), "numbers")
        .key_by(lambda x: x % KEYS)
        .process(RecordedRunningSum())
        .add_sink(FileSink(out))
    )
    plan = plan_job(env._pipeline("thread-deployer"))
    plan.rest = NO_REST_SERVER
    OPENED.clear()
    JobMaster(plan, ThreadDeployer()).run()

    assert sorted(s for s, _ in OPENED) == [0, 1]
    assert len({function for _, function in OPENED}) == 2, OPENED
    records = read_committed(out)
    assert sorted(value for _, value, _ in records) == list(range(1, N + 1))
    sums: dict[int, int] = defaultdict(int)
    # Two source subtasks interleave their halves of the numbers: a key's sums, in increasing
    # order, are its values in the order the function saw them, each added to the sum before.
    for key, value, total in sorted(records, key=lambda r: r[2]):
        assert key == value % KEYS
        sums[key] += value
        assert total == sums[key], f"key {key}: running sum {total} after value {value}"
    assert sums == {k: sum(range(k or KEYS, N + 1, KEYS)) for k in range(KEYS)}
