"""The operator that writes to a sink: the task side of the sink framework
(``connectors/interfaces/sink.py``). It keeps the committables of checkpoints not yet known to
be committed in its operator state (as the sink's ``committable_codec`` stores them), commits
them by the delivery guarantee (with retries), and on
open commits, or hands to the global committer, those of the restored checkpoint it answers for
(``committables.owner_of``), before its committer cleans up what failed attempts left.

**Threading:** the task thread only.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any, TypeVar

from barrierflow.connectors.interfaces import sink_events
from barrierflow.connectors.interfaces.commit_retry import commit_with_retries
from barrierflow.connectors.interfaces.committables import (
    END_OF_INPUT,
    Committable,
    PendingCommittables,
    Recovery,
    from_state,
    owner_of,
    stored_in,
    to_state,
)
from barrierflow.connectors.interfaces.delivery_guarantee import DeliveryGuarantee
from barrierflow.connectors.interfaces.sink import (
    Committer,
    CommitterContext,
    Sink,
    SinkWriter,
    SinkWriterContext,
)
from barrierflow.connectors.interfaces.versioned_codec import encode_stored
from barrierflow.control import messages as msg
from barrierflow.errors import ConfigurationError
from barrierflow.protocol.checkpoint_barrier import CheckpointOptions
from barrierflow.protocol.record_batch import EMPTY, RecordBatch
from barrierflow.runtime.operators import (
    Operator,
    OperatorContext,
    OperatorSnapshot,
    UserFunctionError,
    restore_operator_state,
)
from barrierflow.state.operator_state import OperatorStateStore

log = logging.getLogger("barrierflow.connectors")

T = TypeVar("T")


class SinkOperator(Operator):
    """Committables are union state (``PENDING``): on restore every subtask sees all of them,
    whatever the new parallelism, and takes those of the old subtasks it answers for; the
    writers' own state is split state (``WRITER_STATE``)."""

    PENDING = "pending-committables"
    WRITER_STATE = "writer-state"

    def open(self, ctx: OperatorContext) -> None:
        sink: Sink = self.spec.function
        self._where = f"sink {self.uid!r} ({self.name})"
        self._subtask = ctx.subtask
        self._checkpointing = ctx.checkpointing
        self._guarantee = sink.delivery_guarantee
        self._retry = sink.commit_retry
        self._codec = sink.committable_codec()
        self._send_event = ctx.send_operator_event
        self._reaches_job_master = ctx.operator_events is not None
        self.state = OperatorStateStore()
        if ctx.restore is not None:
            restore_operator_state(self.state, ctx)
        previous = len(ctx.restore.operator_states) if ctx.restore is not None else None
        self.writer: SinkWriter = sink.create_writer(
            SinkWriterContext(
                ctx.job_id, ctx.job_name, self.uid, ctx.subtask, ctx.parallelism, ctx.attempt,
                previous, ctx.checkpointing, _to_driver(ctx),
                tuple(self.state.get_list_state(self.WRITER_STATE).get()),
            )
        )  # fmt: skip
        self.committer: Committer | None = None
        try:
            self.committer = sink.create_committer(
                CommitterContext(
                    ctx.job_id, ctx.job_name, self.uid, ctx.subtask, ctx.parallelism,
                    ctx.attempt, self.writer, _to_driver(ctx),
                )
            )  # fmt: skip
            self._global = sink.create_global_committer() is not None
            self._check_topology()
            self._pending = PendingCommittables()
            self._recover(ctx.parallelism, previous)
        except BaseException:
            self.close()  # the task never lists an operator whose open failed
            raise

    def _recover(self, parallelism: int, previous: int | None) -> None:
        """Before any record: (1) the restored committables of the old subtasks this subtask
        answers for are committed (or handed to the global committer, which commits once every
        subtask handed over its share); (2) the committer cleans up what failed attempts left
        that no checkpoint names, for the same old subtasks."""
        entries = self.state.get_union_list_state(self.PENDING).get()
        committer = self.committer
        if committer is None and not self._global:
            subtasks = [s for _, s, _ in stored_in(entries)]  # not decoded: another sink's
            owned = [s for s in subtasks if owner_of(s, parallelism) == self._subtask]
            if owned:  # the snapshot's sink under this uid was another (DiscardingSink for tests)
                log.warning(
                    "%s, subtask %d, has no committer: the %d committable(s) of the restored "
                    "snapshot it answers for are dropped (the snapshot was taken with another "
                    "sink under this uid)", self._where, self._subtask, len(owned),
                )  # fmt: skip
            return
        restored = from_state(entries, self._codec)
        mine = [c for c in restored if owner_of(c.subtask, parallelism) == self._subtask]
        if self._global:
            self._send(sink_events.Restored(to_state(mine, self._codec)))  # (1)
            return
        assert committer is not None
        self._commit(mine, "commit the restored checkpoint's committables")  # (1)
        recovery = Recovery(self._subtask, parallelism, previous, tuple(restored))
        commit_with_retries(  # (2), idempotent like a commit
            lambda: committer.abort_lingering(recovery),
            self._retry,
            f"{self._where}, subtask {self._subtask},",
            "clean up what failed attempts left",
            time.sleep,
        )

    def _check_topology(self) -> None:
        if self._global and self.committer is not None:
            raise ConfigurationError(
                f"{self._where} has both a committer and a global committer; a sink commits "
                "through one of them: return None from the other"
            )
        if self._global and not self._reaches_job_master:
            raise ConfigurationError(
                f"{self._where} has a global committer, which runs on the JobMaster, but this "
                "subtask has no way to reach it"
            )

    # --- writing ------------------------------------------------------------------------------

    def process_batch(self, batch: RecordBatch) -> RecordBatch:
        try:
            self.writer.write(batch.values)
        except Exception as e:
            raise UserFunctionError(
                f"{self._where}, subtask {self._subtask}, failed to write: {type(e).__name__}: {e}"
            ) from e
        if self._guarantee is DeliveryGuarantee.NONE and not self._global:
            self._commit_now(self.writer.prepare_commit(END_OF_INPUT), END_OF_INPUT)
        return EMPTY

    def finish(self) -> RecordBatch | None:
        """The input ended. Without checkpointing no checkpoint will commit: everything is
        committed now (what a restored snapshot left pending included)."""
        if self._checkpointing:
            return None
        prepared = self.writer.prepare_commit(END_OF_INPUT)
        if self._global:
            self._send(sink_events.Finished(self._stored(prepared)))
        else:
            self._pending.add(END_OF_INPUT, self._subtask, prepared)
            committables, self._pending = self._pending.all(), PendingCommittables()
            self._commit(committables, "commit what was written")
        return None

    # --- checkpoints --------------------------------------------------------------------------

    def snapshot_state(self, checkpoint_id: int, options: CheckpointOptions) -> OperatorSnapshot:
        prepared = self.writer.prepare_commit(checkpoint_id)
        if self._global:
            if prepared:
                self._send(sink_events.Prepared(checkpoint_id, self._stored(prepared)))
            self._pending.add(checkpoint_id, self._subtask, prepared)
        elif self._guarantee is DeliveryGuarantee.EXACTLY_ONCE:
            self._pending.add(checkpoint_id, self._subtask, prepared)
        else:  # at least once: visible before the checkpoint is acknowledged
            self._commit_now(prepared, checkpoint_id)
        pending = self._checked(lambda: to_state(self._pending.all(), self._codec))
        self.state.get_union_list_state(self.PENDING).update(pending)
        self.state.get_list_state(self.WRITER_STATE).update(
            self.writer.snapshot_state(checkpoint_id)
        )
        # What of the records written before the barrier the writer still delivers off the
        # task thread (AT_LEAST_ONCE Kafka): the acknowledgement waits for it.
        flushing = self.writer.flushing(checkpoint_id)
        return OperatorSnapshot(self.state.snapshot(), None, flushing)

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        """Commits what checkpoints up to ``checkpoint_id`` prepared (an aborted one's too: it
        is in the completed one's snapshot); with a global committer, that commits them."""
        done = self._pending.up_to(checkpoint_id)
        if done and not self._global:
            self._commit(done, f"commit checkpoint {checkpoint_id}")
        self._pending.drop_up_to(checkpoint_id)
        self.writer.notify_checkpoint_complete(checkpoint_id)

    # --- committing ---------------------------------------------------------------------------

    def _commit_now(self, prepared: list[Any], checkpoint_id: int) -> None:
        if prepared:
            self._commit(
                [Committable(checkpoint_id, self._subtask, c) for c in prepared],
                "commit what was written",
            )

    def _commit(self, committables: list[Committable], what: str) -> None:
        if not committables:
            return
        committer = self.committer
        if committer is None:
            raise ConfigurationError(
                f"{self._where}: its writer prepared {len(committables)} committable(s) but the "
                "sink has no committer (create_committer returned None)"
            )
        commit_with_retries(
            lambda: committer.commit(committables),
            self._retry,
            f"{self._where}, subtask {self._subtask},",
            what,
            time.sleep,
        )

    def _stored(self, committables: list[Any]) -> list[Any]:
        return self._checked(lambda: [encode_stored(self._codec, c) for c in committables])

    def _checked(self, encode: Callable[[], T]) -> T:
        """``encode()``, which stores committables by the sink's codec; a committable the codec
        refuses (of another type than the sink's) fails the task naming the sink."""
        try:
            return encode()
        except TypeError as e:
            what = "a committable its writer prepared"
            raise UserFunctionError(f"{self._where}: {what}: {e}") from None

    def _send(self, event: sink_events.SinkEvent) -> None:
        self._send_event(sink_events.encode(event))

    def close(self) -> None:
        try:
            self.writer.close()
        finally:
            if self.committer is not None:
                self.committer.close()


def _to_driver(ctx: OperatorContext) -> Callable[[str, str, bytes], None] | None:
    """Records to the driver, over the task's control channel (print(), collect)."""
    send = ctx.send_to_job_master
    if send is None:
        return None

    def to_driver(collector: str, delivery: str, records: bytes) -> None:
        send(
            msg.CollectedRecords(
                ctx.attempt, ctx.token, collector, delivery, ctx.subtask, ctx.parallelism, records
            )
        )

    return to_driver
