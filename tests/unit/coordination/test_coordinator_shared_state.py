"""The coordinator's handling of shared files of incremental checkpoints: registered when a
checkpoint completes, deleted when no retained checkpoint references them, deleted with an
aborted checkpoint that uploaded them, never referenced once released, swept between attempts.
Storage is a real temporary directory; the clock is injected and messages are recorded."""

from __future__ import annotations

from pathlib import Path

import pytest

from barrierflow.checkpoint import storage_layout as layout
from barrierflow.checkpoint.history import CheckpointStatus
from barrierflow.checkpoint.metadata import (
    IncrementalKeyedHandle,
    InlineHandle,
    OperatorSubtaskState,
    SharedFileHandle,
)
from barrierflow.checkpoint.storage import CheckpointDirectory
from barrierflow.coordination.checkpoint_coordinator import CoordinatorConfig
from barrierflow.datastream import StreamExecutionEnvironment
from barrierflow.datastream.connectors.discarding import DiscardingSink
from barrierflow.datastream.connectors.number_seq import NumberSequenceSource
from barrierflow.graph.execution_graph import build_execution_graph
from barrierflow.graph.job_graph import build_job_graph
from barrierflow.graph.stream_graph import build_stream_graph
from barrierflow.testing.coordinator_harness import CoordinatorHarness


class Job:
    """A coordinator of a one-task job whose task acknowledges incremental handles."""

    def __init__(self, root: Path, num_retained: int = 1, max_concurrent: int = 1) -> None:
        env = StreamExecutionEnvironment()
        env.from_source(NumberSequenceSource(1, 10), "s").sink_to(DiscardingSink())
        graph = build_execution_graph(
            build_job_graph(build_stream_graph("job", env._transformations, 1, 128))
        )
        self.uid = graph.job_graph.vertices[0].chain[0].uid
        self.storage = CheckpointDirectory(str(root))
        config = CoordinatorConfig(1.0, 60.0, 0.0, max_concurrent, 10, num_retained)
        self.harness = CoordinatorHarness(graph, config, self.storage)
        self.coordinator = self.harness.coordinator
        self.clock = self.harness.clock
        (self.task,) = self.harness.tasks
        self.uploaded: dict[str, SharedFileHandle] = {}  # sst name -> its upload

    def wait_for_another_task(self) -> None:
        """From the next checkpoint on, one more task must acknowledge: they stay pending."""
        self.coordinator.start_attempt(frozenset({self.task, ("other", 0)}), [self.task])
        self.coordinator.all_tasks_running()

    def trigger(self) -> int:
        return self.harness.trigger()

    def upload(self, cid: int, name: str) -> SharedFileHandle:
        path = layout.shared_state_file(cid, self.uid, 0, name, "u")
        shared = SharedFileHandle(
            name, self.storage.write_state_file(path, b"sst " + name.encode()), cid
        )
        self.uploaded[name] = shared
        return shared

    def ack(self, cid: int, new: list[str], reused: list[str] = ()) -> None:
        shared = [self.uploaded[n] for n in reused] + [self.upload(cid, n) for n in new]
        handle = IncrementalKeyedHandle(
            0, 127, cid, shared, {"CURRENT": InlineHandle(b"MANIFEST-1\n")}, {"count": "value"}
        )
        self.harness.acknowledge(
            cid, self.task, {self.uid: OperatorSubtaskState(0, None, [handle])}
        )

    def on_disk(self) -> set[str]:
        return {path.rsplit("-", 1)[-1] for path in self.storage.list_shared()}

    def status(self, cid: int) -> CheckpointStatus:
        return next(r.status for r in self.coordinator.history.records if r.checkpoint_id == cid)


@pytest.fixture
def job(tmp_path: Path) -> Job:
    return Job(tmp_path)


def test_a_shared_file_goes_when_no_retained_checkpoint_references_it(job):
    one = job.trigger()
    job.ack(one, new=["a.sst", "b.sst"])
    two = job.trigger()
    job.ack(two, new=["c.sst"], reused=["a.sst"])  # b.sst was compacted away
    assert job.on_disk() == {"a.sst", "c.sst"}
    assert [c.checkpoint_id for c in job.coordinator.store.all()] == [two]
    record = job.coordinator.history.records[-1]
    assert record.checkpointed_size == len(b"sst c.sst") + len(b"MANIFEST-1\n")
    assert record.state_size == record.checkpointed_size + len(b"sst a.sst")


def test_retaining_two_keeps_the_files_of_both(tmp_path):
    job = Job(tmp_path, num_retained=2)
    one = job.trigger()
    job.ack(one, new=["a.sst", "b.sst"])
    two = job.trigger()
    job.ack(two, new=["c.sst"], reused=["a.sst"])
    assert job.on_disk() == {"a.sst", "b.sst", "c.sst"}
    three = job.trigger()
    job.ack(three, new=["d.sst"], reused=["c.sst"])
    assert job.on_disk() == {"a.sst", "c.sst", "d.sst"}  # two (a, c) and three (c, d)
    four = job.trigger()
    job.ack(four, new=["e.sst"], reused=["d.sst"])
    assert job.on_disk() == {"c.sst", "d.sst", "e.sst"}


def test_an_aborted_checkpoint_deletes_its_uploads_but_not_the_files_it_reused(job):
    one = job.trigger()
    job.ack(one, new=["a.sst"])
    two = job.trigger()
    job.ack(two, new=[], reused=["a.sst"])
    job.wait_for_another_task()  # three stays pending
    three = job.trigger()
    job.ack(three, new=["x.sst"], reused=["a.sst"])
    job.clock.advance(61)
    job.coordinator.tick()  # times out
    assert job.status(three) is CheckpointStatus.FAILED
    assert "x.sst" not in job.on_disk() and "a.sst" in job.on_disk()


def test_a_late_acknowledgement_of_an_aborted_checkpoint_has_its_uploads_deleted(job):
    job.wait_for_another_task()
    one = job.trigger()
    job.clock.advance(61)
    job.coordinator.tick()
    job.ack(one, new=["late.sst"])
    assert job.on_disk() == set()


def test_a_checkpoint_reusing_a_released_file_is_aborted_not_completed(job):
    one = job.trigger()
    job.ack(one, new=["a.sst"])
    two = job.trigger()
    job.ack(two, new=["b.sst"])  # a.sst released: no retained checkpoint references it
    assert job.on_disk() == {"b.sst"}
    three = job.trigger()
    job.ack(three, new=["c.sst"], reused=["a.sst"])  # a task that missed the notification
    assert job.status(three) is CheckpointStatus.FAILED
    reason = job.coordinator.history.records[-1].failure_reason
    assert "a.sst" in reason and "no longer retained" in reason
    assert [c.checkpoint_id for c in job.coordinator.store.all()] == [two]
    assert not Path(job.storage.absolute(layout.metadata_path(three))).exists()
    assert job.on_disk() == {"b.sst"}


def test_a_file_released_while_a_checkpoint_was_pending_is_held_for_it(tmp_path):
    job = Job(tmp_path, max_concurrent=2)
    one = job.trigger()
    job.ack(one, new=["a.sst"])
    two = job.trigger()
    three = job.trigger()  # its task has seen only checkpoint one complete
    job.ack(two, new=["b.sst"])  # subsumes one: a.sst unreferenced while three is pending
    assert job.on_disk() == {"a.sst", "b.sst"}
    job.ack(three, new=[], reused=["a.sst"])
    assert job.status(three) is CheckpointStatus.COMPLETED
    assert job.on_disk() == {"a.sst"}
    four = job.trigger()
    job.ack(four, new=["c.sst"])
    assert job.on_disk() == {"c.sst"}


def test_a_held_file_goes_when_the_last_checkpoint_it_waited_for_completes_without_it(tmp_path):
    job = Job(tmp_path, max_concurrent=2)
    one = job.trigger()
    job.ack(one, new=["a.sst"])
    two = job.trigger()
    three = job.trigger()
    job.ack(two, new=["b.sst"])  # a.sst unreferenced, held while three is pending
    assert job.on_disk() == {"a.sst", "b.sst"}
    job.ack(three, new=[], reused=["b.sst"])
    assert job.on_disk() == {"b.sst"}


def test_an_ended_attempt_is_swept_of_files_no_retained_checkpoint_references(job):
    one = job.trigger()
    job.ack(one, new=["a.sst"])
    job.wait_for_another_task()
    two = job.trigger()
    job.upload(two, "orphan.sst")  # a task uploaded, then died before acknowledging
    job.storage.write_state_file(f"{layout.checkpoint_dir(two)}/op.keyed", b"state")
    job.coordinator.attempt_ended("the attempt failed")
    assert job.on_disk() == {"a.sst"}
    assert job.storage.list_checkpoint_dirs() == [one]
