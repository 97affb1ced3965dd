"""StreamTask: one subtask of one vertex: its mailbox loop, its lifecycle and its input.

A turn of the loop (``step``): run mails (control messages from the JobMaster, finished
asynchronous snapshots, cancellation); look at timers (the chain's processing-time timers and
periodic watermarks, the alignment timeout of unaligned checkpoints); then, if no output
channel has a backlog, ask the task's input to process one item (``DataInputStatus`` says how
it went) and, if it had none, wait for input or a mail. Checkpoints therefore happen between
buffers, never inside a record (with unaligned checkpoints also between the chunks of one, see
``input_processor.py``); the task's ``SubtaskCheckpointCoordinator`` takes them.

What happens to records is the ``OperatorChain``'s (operators, outputs, event time, snapshots,
end of input); what feeds it is the input's (``NetworkInput`` and ``TwoInputNetworkInput`` over
the input gate, ``SourceInput`` over a source operator). A task restored from an unaligned
checkpoint first sends the output channel state of its checkpoint, then processes its input
channel state, before it takes any new input (``channel_state_restore.py``).

Lifecycle: ``open`` (connect outputs, open operators restoring their state) -> ``step`` until
done -> ``end`` -> ``close``. At the end of input: ``finish()`` the chain, send END_OF_DATA;
with checkpointing, wait until a *final* checkpoint completes (one triggered after every source
of the job ended, so every task has finished and 2PC sinks commit their last data; all tasks
stay until then, so every checkpoint sees every task); then END_OF_PARTITION downstream.
Watermarks are not checkpointed: a restored task starts from the minimum again (so an unaligned
checkpoint's data in flight is replayed before any watermark, as it was before the barrier).

Metrics (``TaskIOMetrics``, sent with the slot's heartbeats): records in and out, counted per
buffer; the time spent waiting for input is idle, waiting for output credit back-pressured,
the rest busy. With buffer debloating, the task's input gate announces to its producers a
buffer size that follows those counters (``BufferDebloater``: records in per second not
idle), a metric too (``debloated_buffer_size``, Flink's ``debloatedBufferSize``: the configured
size without debloating), and the task reads what its own consumers announced with every flush.

**Threading:** ``run`` (or ``open``/``step``/``end``/``close``) on the task's own thread;
``cancel`` from any thread (it puts a mail). The asynchronous phase of snapshots runs on the
slot's pool and reports back through mails. **I/O:** only through the ``TaskNetwork``'s
sockets and, for snapshots and restores, checkpoint storage.
"""

from __future__ import annotations

import threading
import time
import traceback
from collections.abc import Callable
from concurrent.futures import Executor
from typing import Any, cast

import zmq

from barrierflow.checkpoint.state_streams import StorageRestoreStreams
from barrierflow.checkpoint.storage import CheckpointDirectory
from barrierflow.control import messages as msg
from barrierflow.errors import CorruptCheckpointError
from barrierflow.protocol.checkpoint_barrier import CheckpointBarrier
from barrierflow.protocol.frames import FINAL_SNAPSHOT_FOLLOWS, Kind
from barrierflow.runtime.channel_state_restore import restore_channel_state
from barrierflow.runtime.input_processor import (
    DataInputStatus,
    InputKind,
    NetworkInput,
    TwoInputNetworkInput,
)
from barrierflow.runtime.network.buffer_debloater import BufferDebloater, buffers_in_use
from barrierflow.runtime.network.input_gate import InputGate
from barrierflow.runtime.operator_chain import OperatorChain
from barrierflow.runtime.operators.stream_operator import UserFunctionError
from barrierflow.runtime.source_input import SourceInput
from barrierflow.runtime.subtask_checkpoint_coordinator import SubtaskCheckpointCoordinator
from barrierflow.runtime.task_descriptor import TaskDescriptor
from barrierflow.runtime.task_metrics import TaskIOMetrics
from barrierflow.runtime.task_network import TaskNetwork


class TaskCancelled(Exception):
    pass


class StreamTask:
    def __init__(
        self,
        descriptor: TaskDescriptor,
        network: TaskNetwork,
        input_gate: InputGate | None,
        snapshot_pool: Executor,
    ) -> None:
        self.descriptor = descriptor
        self.name = descriptor.name
        self._cancel_requested = False
        self._network = network
        self._gate = input_gate
        self._pool = snapshot_pool
        self.mailbox = network.mailbox()
        self.error: BaseException | None = None
        self.metrics = TaskIOMetrics(descriptor.vertex, descriptor.subtask)  # read by the slot
        self.thread = threading.Thread(target=self.run, name=f"task {self.name}", daemon=True)
        self.chain = OperatorChain(descriptor, self.metrics)
        self.input: NetworkInput | SourceInput  # made by open()
        self._finished = False  # the chain's input ended: no more records
        self._await_final = False  # a final snapshot follows the end of input (stop --drain)
        self._done = False  # END_OF_PARTITION sent
        self._ctl: zmq.Socket | None = None
        # Timers (aligned-checkpoint timeout) are looked at every turn, at least this often:
        self._max_wait_ms = 5 if descriptor.config.aligned_checkpoint_timeout_ms > 0 else 100
        self._debloater: BufferDebloater | None = None  # made when the task opens

    # --- thread entry -----------------------------------------------------------------------

    def start(self) -> None:
        self.thread.start()

    def cancel(self) -> None:
        """From any thread. Also marks the task, so that an error its cancellation causes
        (a send to a consumer that already stopped times out) counts as the cancellation."""
        self._cancel_requested = True
        self.mailbox.put(self._raise_cancelled)

    @staticmethod
    def _raise_cancelled() -> None:
        raise TaskCancelled()

    def run(self) -> None:
        descriptor = self.descriptor
        try:
            self.open()
            while self.step():
                pass
            self.end()
        except TaskCancelled:
            pass
        except BaseException as e:  # noqa: BLE001 - reported to the JobMaster, slot re-raises
            if self._cancel_requested:
                return  # in finally: closed all the same
            self.error = e
            if self._ctl is not None:
                self.send_to_job_master(
                    msg.TaskFailed(
                        descriptor.attempt,
                        descriptor.vertex,
                        descriptor.subtask,
                        f"{type(e).__name__}: {e}",
                        "".join(traceback.format_exception(e)),
                        corrupt_checkpoint_file=corrupt_checkpoint_file(e),
                        signature=failure_signature(e),
                    )
                )
        finally:
            self.metrics.stop()
            self.close()

    # --- lifecycle ----------------------------------------------------------------------------

    def open(self) -> None:
        """Connects the outputs, opens the chain (restoring its state), makes the input and
        reports running."""
        descriptor = self.descriptor
        self._ctl = self._network.control(
            msg.task_identity(descriptor.attempt, descriptor.vertex, descriptor.subtask)
        )
        started = time.perf_counter()
        restore_streams = StorageRestoreStreams(
            CheckpointDirectory(descriptor.restore_uri) if descriptor.restore_uri else None,
            shares_storage=descriptor.restore_uri is not None
            and descriptor.restore_uri == descriptor.config.storage_uri,
        )
        chain = self.chain
        chain.open(
            self._network,
            restore_streams,
            self.send_to_job_master,
            self.metrics.user,
            self.run_in_task_thread,
        )
        self.checkpoints = SubtaskCheckpointCoordinator(descriptor, self, chain, self._pool)
        self.input = self._make_input()
        self.checkpoints.attach_input(self.input)
        self._poller_in = self._network.poller()
        self._poller_out = self._network.poller()
        for poller in (self._poller_in, self._poller_out):
            poller.register(self._ctl, zmq.POLLIN)
            poller.register(self.mailbox.socket, zmq.POLLIN)
        if self._gate is not None:
            self._poller_in.register(self._gate.socket, zmq.POLLIN)
            # a priority barrier wakes a backlogged task (a task with a gate reads the network)
            if isinstance(self.input, NetworkInput) and self.input.overtakes:
                self._poller_out.register(self._gate.socket, zmq.POLLIN)
        for socket in chain.output_sockets():
            self._poller_out.register(socket, zmq.POLLIN)
        head_restore = (descriptor.restore or {}).get(descriptor.chain[0].uid)
        if head_restore is not None and head_restore.channel_states:
            restore_channel_state(descriptor, head_restore, restore_streams, chain)
            chain.backlogged()  # sends what the credit granted so far allows
        self._next_flush = time.monotonic() + descriptor.config.buffer_timeout_s
        debloat = descriptor.config.buffer_debloat
        if self._gate is not None:  # debloatedBufferSize: the configured size until told
            self.metrics.debloated_buffer_size = descriptor.config.buffer_size
        if debloat is not None and self._gate is not None:
            in_use = buffers_in_use(self._gate.num_channels, descriptor.config.initial_credit)
            self._debloater = BufferDebloater(debloat, in_use, time.perf_counter_ns())
            self.metrics.debloated_buffer_size = self._debloater.announced
        interval_ms = descriptor.config.auto_watermark_interval_ms
        self._watermark_interval_s = interval_ms / 1000 if interval_ms > 0 else float("inf")
        self._next_watermark = time.monotonic() + self._watermark_interval_s
        self.metrics.start()
        self.send_to_job_master(
            msg.TaskRunning(
                descriptor.attempt,
                descriptor.vertex,
                descriptor.subtask,
                restore_bytes_read=restore_streams.bytes_read,
                restore_ms=(time.perf_counter() - started) * 1000,
            )
        )

    def _make_input(self) -> NetworkInput | SourceInput:
        descriptor, chain = self.descriptor, self.chain
        if chain.source is not None:
            return SourceInput(
                chain.source,
                chain,
                self.metrics,
                descriptor.config.buffer_size,
                lambda: self.checkpoints.sources_paused,
                debloated=descriptor.config.buffer_debloat is not None,
            )
        if self._gate is None:
            raise ValueError(
                f"{self.name} has neither a source nor input channels: the job graph gave this "
                "vertex, which does not start with a source, no input edge"
            )
        settings: dict[str, Any] = {
            "chain": chain,
            "checkpoints": self.checkpoints,
            "metrics": self.metrics,
            "buffer_size": descriptor.config.buffer_size,
            "unaligned": descriptor.config.unaligned_checkpoints,
            "run_mailbox": self._run_mailbox,
        }
        if chain.takes_two_inputs:
            return TwoInputNetworkInput(self._gate, descriptor.input_of_channel, **settings)
        return NetworkInput(self._gate, **settings)

    def end(self) -> None:
        """After the last turn: waits until every queued buffer and event went out."""
        while self.chain.backlogged():
            self._run_mails()
            started = time.perf_counter_ns()
            time.sleep(0.001)
            self.metrics.backpressured_ns += time.perf_counter_ns() - started
        descriptor = self.descriptor
        self.send_to_job_master(
            msg.TaskFinished(descriptor.attempt, descriptor.vertex, descriptor.subtask)
        )

    def close(self) -> None:
        """Closes what the task made. Its input gate is the slot's: closed once every subtask
        of the slot stopped, so that a producer of the slot never sends into a closed gate.
        A task that did not end its output (canceled, failed) drops what is still queued on
        it at once: the frames of a failed attempt are refused by the next one's consumers,
        and a socket left to send them to a consumer that is gone would hold the slot's
        process, and so the next attempt's Spark task, for its linger period."""
        self.chain.close(linger_ms=None if self._done else 0)
        if self._ctl is not None:
            self._ctl.close()
        self.mailbox.close()

    # --- the mailbox loop --------------------------------------------------------------------

    def step(self) -> bool:
        """One turn of the loop; False once the task is done."""
        if self._done:
            return False
        self._run_mails()
        self._on_timers()
        task_input, chain = self.input, self.chain
        if chain.backlogged():
            if not task_input.process_priority_events():
                self._wait_for_credit()
            return not self._done
        status = task_input.process_input()
        if status is DataInputStatus.END_OF_DATA:
            if task_input.final_snapshot_follows:
                self._await_final = True
            self._end_of_input()
        elif status is DataInputStatus.NOTHING_AVAILABLE:
            wait_ms = max(0, int((self._next_flush - time.monotonic()) * 1000)) + 1
            self._wait_for_input(int(min(wait_ms, self._max_wait_ms, task_input.poll_interval_ms)))
        elif status is DataInputStatus.END_OF_INPUT:
            self._maybe_terminate()
            if not self._done:
                self._wait_for_input(self._max_wait_ms)
        now = time.monotonic()
        if now >= self._next_flush:
            chain.flush()
            if self.descriptor.config.buffer_debloat is not None:
                chain.receive_credits()  # the buffer sizes its consumers announced
            self._next_flush = now + self.descriptor.config.buffer_timeout_s
        return not self._done

    def _on_timers(self) -> None:
        chain = self.chain
        if self.descriptor.config.unaligned_checkpoints:
            now_ns = time.time_ns()
            self.input.on_time(now_ns)
            self.checkpoints.on_time(now_ns)
        if chain.has_timers and not self._finished:  # after finish(), outputs would be lost
            chain.fire_processing_timers(time.time_ns() // 1_000_000)
        if chain.assigns_timestamps and time.monotonic() >= self._next_watermark:
            chain.emit_periodic_watermarks(time.time_ns() // 1_000_000)
            self._next_watermark = time.monotonic() + self._watermark_interval_s
        debloater, gate = self._debloater, self._gate  # a debloater is made only with a gate
        if debloater is not None and gate is not None:
            metrics = self.metrics
            size = debloater.sample(time.perf_counter_ns(), metrics.records_in, metrics.idle_ns)
            if size is not None:
                gate.announce_buffer_size(size)
                metrics.debloated_buffer_size = size

    def _wait_for_credit(self) -> None:
        """Back-pressured: an output channel has a backlog; waits for credit (or a mail)."""
        started = time.perf_counter_ns()
        self._poller_out.poll(self._max_wait_ms)
        self.metrics.backpressured_ns += time.perf_counter_ns() - started

    def _wait_for_input(self, timeout_ms: int) -> None:
        """Idle: no input to take; waits for some (or a mail)."""
        started = time.perf_counter_ns()
        self._poller_in.poll(timeout_ms)
        self.metrics.idle_ns += time.perf_counter_ns() - started

    def _run_mails(self) -> None:
        ctl = self._ctl
        assert ctl is not None  # opened by open()
        while cast(int, ctl.getsockopt(zmq.EVENTS)) & zmq.POLLIN:  # an int option
            self._on_control(msg.decode(ctl.recv()))
        self._run_mailbox()

    def _run_mailbox(self) -> None:
        """Finished snapshots (their acknowledgements) and cancellation; safe between two
        chunks of a buffer, unlike control messages, which may end the task."""
        if cast(int, self.mailbox.socket.getsockopt(zmq.EVENTS)) & zmq.POLLIN:
            for mail in self.mailbox.drain():
                mail()

    # --- what the subtask checkpoint coordinator needs of the task ------------------------------

    def send_to_job_master(self, message: msg.Message) -> None:
        assert self._ctl is not None  # opened by open()
        self._ctl.send(msg.encode(message))

    def run_in_task_thread(self, mail: Callable[[], None]) -> None:
        self.mailbox.put(mail)

    # --- control messages -----------------------------------------------------------------------

    def _on_control(self, message: msg.AnyMessage) -> None:
        if message.attempt != self.descriptor.attempt:
            return
        source = self.input.kind is InputKind.SOURCE
        if isinstance(message, msg.TriggerCheckpoint):
            if source:
                self.checkpoints.trigger(
                    CheckpointBarrier(message.checkpoint_id, message.timestamp_ms, message.options)
                )
        elif isinstance(message, msg.NotifyCheckpointComplete):
            self.checkpoints.notify_complete(message.checkpoint_id)
            self._maybe_terminate()
        elif isinstance(message, msg.NotifyCheckpointAborted):
            self.checkpoints.notify_aborted(message.checkpoint_id, message.references_released)
        elif isinstance(message, msg.OperatorEventToTask):
            self.chain.dispatch_operator_event(message.operator_uid, message.payload)
        elif isinstance(message, msg.EndInput):
            if isinstance(self.input, SourceInput) and not self._finished:
                self._await_final = True
                self.input.end_input()
                self._end_of_input()
        elif isinstance(message, msg.CancelAttempt):
            raise TaskCancelled()

    # --- end of input ---------------------------------------------------------------------------

    def _end_of_input(self) -> None:
        """All input was read: end the chain's input, tell downstream and the JobMaster."""
        self.chain.end_input()
        self._finished = True
        self.chain.broadcast_event(
            Kind.END_OF_DATA, FINAL_SNAPSHOT_FOLLOWS if self._await_final else None
        )
        if self.input.kind is InputKind.SOURCE:
            descriptor = self.descriptor
            self.send_to_job_master(
                msg.EndOfInput(descriptor.attempt, descriptor.vertex, descriptor.subtask)
            )
        self._maybe_terminate()

    def _maybe_terminate(self) -> None:
        """The task ends (END_OF_PARTITION) once its input ended and every upstream task ended,
        and, with checkpointing or a drain, a final snapshot completed; or once a suspend
        savepoint completed (stop), without finishing its input."""
        stopped = self.checkpoints.stop_completed
        if self._done or not (self._finished or stopped):
            return
        if not self.input.is_finished:
            return
        awaits_final = self.descriptor.config.checkpointing or self._await_final
        if not stopped and awaits_final and not self.checkpoints.final_checkpoint_completed:
            return
        self.chain.broadcast_event(Kind.END_OF_PARTITION)
        self._done = True


def corrupt_checkpoint_file(error: BaseException) -> str | None:
    """The corrupt checkpoint file behind ``error`` (raised by a restore, perhaps wrapped by
    the operator that restored), if that is what it is."""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, CorruptCheckpointError):
            return seen.path
        seen = seen.__cause__ or seen.__context__
    return None


def failure_signature(error: BaseException) -> msg.FailureSignature | None:
    """What identifies ``error``, if the user's function raised it on a known record."""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, UserFunctionError) and seen.record:
            return msg.FailureSignature(seen.operator, seen.exception_type, seen.record)
        seen = seen.__cause__ or seen.__context__
    return None
