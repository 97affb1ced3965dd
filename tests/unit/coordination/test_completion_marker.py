"""Writing a completion marker off the JobMaster's thread: the checkpoint stays pending (and does
not time out) until it is written; then it completes, or is aborted if the write failed, or
has what was written deleted if it was aborted meanwhile."""

from __future__ import annotations

from barrierflow.coordination.completion_marker import CompletionMarker
from barrierflow.coordination.pending_checkpoint import PendingCheckpoint, PendingCheckpoints
from barrierflow.testing.coordinator_harness import DeferredStorageIo, ManualClock


class Rig:
    def __init__(self) -> None:
        self.clock = ManualClock()
        self.io = DeferredStorageIo()
        self.pending = PendingCheckpoints(timeout_s=10.0)
        self.events: list[tuple] = []
        self.marker = CompletionMarker(
            self.pending, self.io, self.clock, lambda cid, detail: self.events.append((cid, detail))
        )
        self.checkpoint = PendingCheckpoint(3, 0, frozenset())
        self.pending.add(self.checkpoint, self.clock.now_s)

    def write(self, fail_with: Exception | None = None) -> None:
        def write() -> None:
            if fail_with is not None:
                raise fail_with
            self.events.append("written")

        self.marker.write(
            self.checkpoint,
            write,
            lambda now, duration_ms: self.events.append(("then", now, duration_ms)),
            discard=lambda: self.events.append("discarded"),
        )


def test_a_checkpoint_completes_with_its_duration_once_its_marker_is_written():
    rig = Rig()
    rig.clock.advance(2.0)
    rig.write()
    rig.clock.advance(30.0)  # past the timeout while the marker is written: it does not expire
    assert rig.pending.expired(rig.clock.now_s) == [] and rig.events == []
    rig.io.run_all()
    assert rig.events == ["written", ("then", rig.clock.now_s, 32_000.0)]
    assert rig.pending.get(3) is None


def test_a_marker_that_cannot_be_written_fails_the_checkpoint_and_nothing_follows():
    rig = Rig()
    rig.write(fail_with=OSError("disk full"))
    rig.io.run_all()
    assert rig.events == [(3, "writing its metadata failed: disk full")]


def test_the_marker_of_a_checkpoint_aborted_while_it_was_written_is_deleted_again():
    rig = Rig()
    rig.write()
    rig.pending.remove(3)  # the attempt ended
    rig.io.run_all()
    assert rig.events == ["written", "discarded"]


def test_a_failed_marker_of_a_checkpoint_aborted_meanwhile_needs_nothing_more():
    rig = Rig()
    rig.write(fail_with=OSError("disk full"))
    rig.pending.remove(3)
    rig.io.run_all()
    assert rig.events == []
