"""The control protocol between the JobMaster (driver) and the slots and tasks (executors).

MessagePack through msgspec, decoded only into these types. Every message carries the attempt
number; the JobMaster drops messages of other attempts, which fences off the subtasks of a
failed attempt that have not stopped yet. Performs no I/O.
"""

from __future__ import annotations

import msgspec

from barrierflow.checkpoint.metadata import OperatorSubtaskState, SubtaskCheckpointStats
from barrierflow.protocol.checkpoint_barrier import (
    CHECKPOINT,
    CheckpointOptions,
    DeclineReason,
    SnapshotFormat,
)
from barrierflow.protocol.source_backlog import SourceBacklog


class Message(msgspec.Struct, frozen=True, tag=True):
    attempt: int


# --- slot / task -> JobMaster ----------------------------------------------------------------


class SlotRegistered(Message, frozen=True):
    slot: int
    host: str
    pid: int
    # The TCP endpoints of the input gates the slot bound, by "vertex/subtask": the JobMaster
    # hands every slot all of them (``GateEndpoints``) once the last slot registered.
    gates: dict[str, str] = {}


class SubtaskMetrics(msgspec.Struct, frozen=True):
    """What one subtask did since it started, cumulative: the JobMaster turns two samples into
    rates (Flink's ``numRecordsInPerSecond``, ``busyTimeMsPerSecond``...). Records in are the
    records the subtask took in (from the network, or read by its source); records out, those
    its chain emitted downstream. Its time is split three ways: waiting for input (idle),
    waiting for output credit (back-pressured), and the rest (busy)."""

    vertex: str
    subtask: int
    records_in: int
    records_out: int
    busy_ms: float
    backpressured_ms: float
    idle_ms: float
    # the program's metrics (get_metrics_group()): (operator, name, value)
    user: tuple[tuple[str, str, float], ...] = ()
    # epoch seconds at which the subtask took its first record in (None: not yet): how long
    # a recovery took (cluster/recovery_times.py)
    first_record_at: float | None = None
    # a source subtask's backlog, when its reader can tell (the autoscaler's input)
    backlog: SourceBacklog | None = None
    # records per buffer the subtask's input gate asks its producers for (Flink's
    # debloatedBufferSize, in records): with buffer debloating the size it announced last,
    # else the configured one; None: a subtask without input gate (a source)
    debloated_buffer_size: int | None = None


class SlotHeartbeat(Message, frozen=True):
    slot: int
    # The metrics of the slot's subtasks; absent from slots that predate them.
    tasks: list[SubtaskMetrics] = []


class SlotStopped(Message, frozen=True):
    slot: int


class TaskRunning(Message, frozen=True):
    """The task restored its state and processes input."""

    vertex: str
    subtask: int
    restore_bytes_read: int = 0  # from checkpoint storage (none when restored from local state)
    restore_ms: float = 0.0


class AcknowledgeCheckpoint(Message, frozen=True):
    vertex: str
    subtask: int
    checkpoint_id: int
    operator_states: dict[str, OperatorSubtaskState]
    stats: SubtaskCheckpointStats


class DeclineCheckpoint(Message, frozen=True):
    vertex: str
    subtask: int
    checkpoint_id: int
    reason: DeclineReason
    detail: str = ""


class CollectedRecords(Message, frozen=True):
    """Records a sink sends to the driver (``print()``, ``execute_and_collect``); ``delivery``
    names them, so that the driver takes a batch sent again after a recovery only once."""

    token: int  # the attempt's data token: the driver unpickles only what its own tasks sent
    collector: str
    delivery: str
    subtask: int
    parallelism: int
    records: bytes  # a pickled list


class EndOfInput(Message, frozen=True):
    """A source subtask read all of its input (a bounded source)."""

    vertex: str
    subtask: int


class TaskFinished(Message, frozen=True):
    vertex: str
    subtask: int


class FailureSignature(msgspec.Struct, frozen=True):
    """What tells a failure on a record from another: two attempts that fail with the same
    signature failed on a poison record (``cluster/identical_failures.py``)."""

    operator: str  # "uid (name)"
    exception_type: str
    record: str  # as the error message shows it


class TaskFailed(Message, frozen=True):
    vertex: str
    subtask: int
    error: str
    traceback: str
    # a file of the checkpoint being restored that is corrupt: the checkpoint is unusable
    corrupt_checkpoint_file: str | None = None
    # the user function failed on a known record (None for any other failure)
    signature: FailureSignature | None = None


class OperatorEventToCoordinator(Message, frozen=True):
    """From a subtask of operator ``operator_uid`` to that operator's coordinator on the
    JobMaster (``control/operator_coordinator.py``); ``payload`` is the connector's own."""

    vertex: str
    subtask: int
    operator_uid: str
    payload: bytes


# --- JobMaster -> slot / task ----------------------------------------------------------------


class TriggerCheckpoint(Message, frozen=True):
    """To every source subtask: inject the barrier of ``checkpoint_id``."""

    checkpoint_id: int
    timestamp_ms: int
    options: CheckpointOptions = CHECKPOINT


class NotifyCheckpointComplete(Message, frozen=True):
    checkpoint_id: int


class NotifyCheckpointAborted(Message, frozen=True):
    checkpoint_id: int
    # It referenced shared files that were already released: the task missed a notification,
    # and must not reuse the files it believes confirmed.
    references_released: bool = False


class OperatorEventToTask(Message, frozen=True):
    """From the coordinator of operator ``operator_uid`` to one of its subtasks."""

    vertex: str
    subtask: int
    operator_uid: str
    payload: bytes


class EndInput(Message, frozen=True):
    """To every source subtask (stop --drain): end the input now, as if it were exhausted;
    a final snapshot follows, which every task waits for before it ends."""


class GateEndpoints(Message, frozen=True):
    """To every slot, once all slots of the attempt registered: where each input gate of the
    attempt listens ("vertex/subtask" -> TCP endpoint). A slot connects its subtasks' outputs
    to them; it starts no subtask before it has them."""

    gates: dict[str, str]


class Heartbeat(Message, frozen=True):
    pass


class CancelAttempt(Message, frozen=True):
    reason: str
    # The job ends with this attempt (canceled, or failed with no restart left): the slots
    # remove what their subtasks kept on local disk for a restart.
    job_ended: bool = False


# --- command line -> JobMaster (attempt 0: not bound to an attempt) -------------------------------


class CancelJob(Message, frozen=True):
    job_id: str
    secret: str  # from the JobMaster's address file: only who can read it may cancel


class CancelJobReply(Message, frozen=True):
    accepted: bool
    reason: str = ""


class TriggerSavepoint(Message, frozen=True):
    """A savepoint of ``job_id`` into a new directory under ``target_dir`` (empty: the job's
    configured savepoint directory); ``stop`` ends the job with it, ``drain`` first ends the
    input. Answered by ``SavepointReply`` once the savepoint completed or failed."""

    job_id: str
    secret: str
    target_dir: str
    snapshot_format: SnapshotFormat
    stop: bool = False
    drain: bool = False


class SavepointReply(Message, frozen=True):
    path: str | None = None
    error: str | None = None


class RescaleJob(Message, frozen=True):
    """Rescales ``job_id``: ``parallelism`` (0: unchanged) for every operator without one of
    its own, ``per_operator`` (uid -> parallelism) for some. Answered by ``RescaleJobReply``
    once the job runs at the new parallelism, or was refused."""

    job_id: str
    secret: str
    parallelism: int = 0
    per_operator: dict[str, int] = {}
    reason: str = "asked for from the command line"


class RescaleJobReply(Message, frozen=True):
    record: bytes | None = None  # the RescaleRecord as JSON, once done
    error: str | None = None


class PingJob(Message, frozen=True):
    """Is the JobMaster of ``job_id`` alive? (Asked before another one takes the job over.)"""

    job_id: str


class PingJobReply(Message, frozen=True):
    job_id: str


AnyMessage = (
    SlotRegistered
    | SlotHeartbeat
    | SlotStopped
    | TaskRunning
    | AcknowledgeCheckpoint
    | DeclineCheckpoint
    | CollectedRecords
    | EndOfInput
    | TaskFinished
    | TaskFailed
    | OperatorEventToCoordinator
    | TriggerCheckpoint
    | NotifyCheckpointComplete
    | NotifyCheckpointAborted
    | OperatorEventToTask
    | EndInput
    | GateEndpoints
    | Heartbeat
    | CancelAttempt
    | CancelJob
    | CancelJobReply
    | TriggerSavepoint
    | SavepointReply
    | RescaleJob
    | RescaleJobReply
    | PingJob
    | PingJobReply
)

_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(AnyMessage)


def encode(message: Message) -> bytes:
    return _encoder.encode(message)


def decode(data: bytes) -> AnyMessage:
    return _decoder.decode(data)


def slot_identity(attempt: int, slot: int) -> bytes:
    return f"s/{attempt}/{slot}".encode()


def task_identity(attempt: int, vertex: str, subtask: int) -> bytes:
    return f"t/{attempt}/{vertex}/{subtask}".encode()
