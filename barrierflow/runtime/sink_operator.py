"""The operator that writes to a two-phase-commit sink: its pending committables are its
operator state.

**Threading:** the task thread only.
"""

from __future__ import annotations

from collections.abc import Callable

from barrierflow.connectors.sink import SinkWriterContext
from barrierflow.control import messages as msg
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


class SinkOperator(Operator):
    """Writes through a two-phase-commit writer; its operator state is the uncommitted
    committables of every checkpoint not yet known to be complete. Union state: on restore
    every subtask's writer sees all of them, whatever the new parallelism, and commits them
    (all, idempotently, or its share by a rule every subtask applies alike)."""

    PENDING = "pending-committables"

    def open(self, ctx: OperatorContext) -> None:
        self._where = f"sink {self.uid!r} ({self.name}), subtask {ctx.subtask}"
        self._checkpointing = ctx.checkpointing
        self.state = OperatorStateStore()
        self.writer = self.spec.function.create_writer(
            SinkWriterContext(
                ctx.job_id,
                ctx.job_name,
                self.uid,
                ctx.subtask,
                ctx.parallelism,
                ctx.attempt,
                len(ctx.restore.operator_states) if ctx.restore is not None else None,
                ctx.checkpointing,
                self._to_driver(ctx),
            )
        )
        restored: list[dict] = []
        if ctx.restore is not None:
            restore_operator_state(self.state, ctx)
            restored = self.state.get_union_list_state(self.PENDING).get()
        try:
            self.writer.recover(
                [c for entry in restored for c in entry["committables"]], ctx.parallelism
            )
        except BaseException:
            self.writer.close()  # the task never lists an operator whose open failed
            raise
        self._pending: list[dict] = []  # {"checkpoint_id": n, "committables": [...]}

    @staticmethod
    def _to_driver(ctx: OperatorContext) -> Callable[[str, str, bytes], None] | None:
        send = ctx.send_to_job_master
        if send is None:
            return None

        def to_driver(collector: str, delivery: str, records: bytes) -> None:
            send(
                msg.CollectedRecords(
                    ctx.attempt,
                    ctx.token,
                    collector,
                    delivery,
                    ctx.subtask,
                    ctx.parallelism,
                    records,
                )
            )

        return to_driver

    def process_batch(self, batch: RecordBatch) -> RecordBatch:
        try:
            self.writer.write(batch.values)
        except Exception as e:
            raise UserFunctionError(
                f"{self._where} failed to write: {type(e).__name__}: {e}"
            ) from e
        return EMPTY

    def finish(self) -> RecordBatch | None:
        if not self._checkpointing:  # no checkpoint will commit: what savepoints left, and the rest
            pending = [c for p in self._pending for c in p["committables"]]
            self._pending = []
            self.writer.commit(pending + self.writer.prepare_commit(0))
        return None

    def snapshot_state(self, checkpoint_id: int, options: CheckpointOptions) -> OperatorSnapshot:
        committables = self.writer.prepare_commit(checkpoint_id)
        if committables:
            self._pending.append({"checkpoint_id": checkpoint_id, "committables": committables})
        self.state.get_union_list_state(self.PENDING).update(self._pending)
        return OperatorSnapshot(self.state.snapshot(), None)

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        done = [p for p in self._pending if p["checkpoint_id"] <= checkpoint_id]
        if done:
            self.writer.commit([c for p in done for c in p["committables"]])
            self._pending = [p for p in self._pending if p["checkpoint_id"] > checkpoint_id]

    def close(self) -> None:
        self.writer.close()
