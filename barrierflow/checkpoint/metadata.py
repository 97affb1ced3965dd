"""The checkpoint metadata format: what ``chk-N/_metadata`` holds, and how it is framed.

The body is MessagePack decoded only into the declared types below (never pickle), framed as::

    magic "BFLWMETA" | format version u16 | body length u64 | BLAKE2b-128 of body | body

so that a truncated or corrupted file is detected and named before anything in it is used.
State handles also travel in task acknowledgements, so they live here too.

Performs no I/O.
"""

from __future__ import annotations

import hashlib
import struct

import msgspec

from barrierflow.errors import CorruptCheckpointError
from barrierflow.protocol.checkpoint_barrier import CheckpointKind, SnapshotFormat

MAGIC = b"BFLWMETA"
# 2: keyed state handles are tagged (full "key-groups" or "incremental");
# 3: operators may carry their coordinator's state (``OperatorCoordinatorState``)
FORMAT_VERSION = 3
_OLDEST_READABLE_VERSION = 1
_HEADER = struct.Struct(">8sHQ16s")


# --- state handles ---------------------------------------------------------------------------


class InlineHandle(msgspec.Struct, frozen=True, tag="inline"):
    """State small enough (below ``data-inline-threshold``) to travel inside the metadata."""

    data: bytes


class FileHandle(msgspec.Struct, frozen=True, tag="file"):
    """A state file, by path relative to the job's checkpoint directory."""

    path: str
    size: int
    checksum: str


StreamHandle = InlineHandle | FileHandle


def stream_size(handle: StreamHandle) -> int:
    return len(handle.data) if isinstance(handle, InlineHandle) else handle.size


class KeyGroupsHandle(msgspec.Struct, frozen=True, tag="key-groups"):
    """A full snapshot of the keyed state of a key-group range in the key-group format
    (``checkpoint/key_group_format.py``); ``offsets`` locate each key group's section.
    Self-contained: it references nothing of other checkpoints."""

    key_group_start: int
    key_group_end: int
    offsets: list[tuple[int, int, int]]  # (key group, offset, length)
    stream: StreamHandle
    format_version: int = 1  # of the key-group format; absent in metadata written before it
    states: dict[str, str] = {}  # state name -> kind; empty in metadata written before it
    types: dict[str, str] = {}  # state name -> declared type (state/state_schema.py), if any
    backend: str = ""  # the backend that wrote it ("hashmap", "rocksdb"); "" before it was kept

    def state_size(self) -> int:
        return stream_size(self.stream)

    def checkpointed_size(self, checkpoint_id: int) -> int:
        return stream_size(self.stream)


class SharedFileHandle(msgspec.Struct, frozen=True):
    """An immutable RocksDB file under ``shared/``, which later checkpoints may reference."""

    local_name: str  # its name in the RocksDB instance, e.g. "000012.sst"
    file: FileHandle
    checkpoint_id: int  # the checkpoint that uploaded it


class IncrementalKeyedHandle(msgspec.Struct, frozen=True, tag="incremental"):
    """An incremental RocksDB checkpoint of a key-group range: the files that open as the
    database. ``shared`` lists every SST file it needs, uploaded by this checkpoint or by an
    earlier one (``SharedFileHandle.checkpoint_id`` says which); ``private`` holds MANIFEST,
    CURRENT and OPTIONS, written for this checkpoint alone. ``states``: column family name ->
    state kind, for readers that do not open the database."""

    key_group_start: int
    key_group_end: int
    checkpoint_id: int
    shared: list[SharedFileHandle]
    private: dict[str, StreamHandle]
    states: dict[str, str]  # state name -> StateKind value
    types: dict[str, str] = {}  # state name -> declared type (state/state_schema.py), if any
    backend: str = "rocksdb"

    def state_size(self) -> int:
        shared = sum(s.file.size for s in self.shared)
        return shared + sum(stream_size(h) for h in self.private.values())

    def checkpointed_size(self, checkpoint_id: int) -> int:
        """What ``checkpoint_id`` wrote of this handle: its private files and new SST files."""
        new = sum(s.file.size for s in self.shared if s.checkpoint_id == checkpoint_id)
        return new + sum(stream_size(h) for h in self.private.values())


KeyedStateHandle = KeyGroupsHandle | IncrementalKeyedHandle


class OperatorSubtaskState(msgspec.Struct, frozen=True):
    """Everything one subtask of one operator contributed to a checkpoint. ``channel_state``
    (``checkpoint/channel_state.py``): the data in flight an unaligned checkpoint stored, kept
    with the first operator of the subtask's chain."""

    subtask: int
    operator_state: StreamHandle | None = None
    keyed_state: list[KeyedStateHandle] = []
    channel_state: StreamHandle | None = None

    def _own_size(self) -> int:
        size = stream_size(self.operator_state) if self.operator_state else 0
        return size + (stream_size(self.channel_state) if self.channel_state else 0)

    def state_size(self) -> int:
        """The full size of the state, wherever its files were written."""
        return self._own_size() + sum(k.state_size() for k in self.keyed_state)

    def checkpointed_size(self, checkpoint_id: int) -> int:
        """The bytes ``checkpoint_id`` wrote (less than ``state_size`` when incremental)."""
        return self._own_size() + sum(k.checkpointed_size(checkpoint_id) for k in self.keyed_state)

    def shared_paths(self, uploaded_by: int | None = None) -> list[str]:
        """The shared files referenced (only those ``uploaded_by`` that checkpoint, if given)."""
        return [
            s.file.path
            for k in self.keyed_state
            if isinstance(k, IncrementalKeyedHandle)
            for s in k.shared
            if uploaded_by is None or s.checkpoint_id == uploaded_by
        ]


class OperatorCoordinatorState(msgspec.Struct, frozen=True):
    """What an operator's coordinator on the JobMaster (``control/operator_coordinator.py``)
    snapshotted: bytes of the coordinator's own encoding, inline (no file to relocate), covered
    by the metadata's checksum. ``format_version`` is this section's layout, for readers to
    refuse one it does not know (``decode_metadata`` does)."""

    data: bytes
    format_version: int = 1


COORDINATOR_STATE_VERSION = 1


class OperatorState(msgspec.Struct, frozen=True):
    uid: str
    name: str
    parallelism: int
    max_parallelism: int
    subtasks: list[OperatorSubtaskState]
    coordinator: OperatorCoordinatorState | None = None  # absent before format version 3
    key_type: str = ""  # the declared key type (``key_by(..., key_type)``) as text, if any


# --- figures ---------------------------------------------------------------------------------


class SubtaskCheckpointStats(msgspec.Struct, frozen=True):
    vertex: str
    subtask: int
    sync_ms: float
    async_ms: float
    alignment_ms: float
    state_size: int
    processed_data: int = 0  # bytes of buffers processed between first and last barrier
    checkpointed_size: int = 0  # bytes written by this checkpoint (incremental: new files only)
    unaligned: bool = False  # the snapshot was taken unaligned
    persisted_data: int = 0  # bytes of data in flight stored (unaligned)
    start_delay_ms: float = 0.0  # from the trigger to the first barrier at this subtask


class CheckpointMetadata(msgspec.Struct, frozen=True):
    job_id: str
    job_name: str
    checkpoint_id: int
    trigger_timestamp_ms: int
    completion_timestamp_ms: int
    operators: list[OperatorState]
    stats: list[SubtaskCheckpointStats] = []
    # What it is (absent before savepoints existed: a checkpoint in its backend's format).
    kind: CheckpointKind = CheckpointKind.CHECKPOINT
    snapshot_format: SnapshotFormat = SnapshotFormat.NATIVE
    # The epoch of the JobMaster that wrote it, under high availability (0: none, or written
    # before epochs existed); a leader never builds on a checkpoint of a later epoch.
    leader_epoch: int = 0

    @property
    def is_savepoint(self) -> bool:
        return self.kind in (
            CheckpointKind.SAVEPOINT,
            CheckpointKind.SUSPEND,
            CheckpointKind.TERMINATE,
        )

    def state_size(self) -> int:
        return sum(s.state_size() for op in self.operators for s in op.subtasks)

    def checkpointed_size(self) -> int:
        cid = self.checkpoint_id
        return sum(s.checkpointed_size(cid) for op in self.operators for s in op.subtasks)

    def shared_paths(self) -> set[str]:
        """Every file under ``shared/`` this checkpoint references."""
        return {p for op in self.operators for s in op.subtasks for p in s.shared_paths()}

    def operator(self, uid: str) -> OperatorState | None:
        return next((op for op in self.operators if op.uid == uid), None)


# --- format version 1: full snapshots only, keyed state handles untagged --------------------


class _V1KeyGroupsHandle(msgspec.Struct, frozen=True):
    key_group_start: int
    key_group_end: int
    offsets: list[tuple[int, int, int]]
    stream: StreamHandle


class _V1OperatorSubtaskState(msgspec.Struct, frozen=True):
    subtask: int
    operator_state: StreamHandle | None = None
    keyed_state: list[_V1KeyGroupsHandle] = []


class _V1OperatorState(msgspec.Struct, frozen=True):
    uid: str
    name: str
    parallelism: int
    max_parallelism: int
    subtasks: list[_V1OperatorSubtaskState]


class _V1CheckpointMetadata(msgspec.Struct, frozen=True):
    job_id: str
    job_name: str
    checkpoint_id: int
    trigger_timestamp_ms: int
    completion_timestamp_ms: int
    operators: list[_V1OperatorState]
    stats: list[SubtaskCheckpointStats] = []

    def upgrade(self) -> CheckpointMetadata:
        operators = [
            OperatorState(
                op.uid,
                op.name,
                op.parallelism,
                op.max_parallelism,
                [
                    OperatorSubtaskState(
                        s.subtask,
                        s.operator_state,
                        [KeyGroupsHandle(*msgspec.structs.astuple(k)) for k in s.keyed_state],
                    )
                    for s in op.subtasks
                ],
            )
            for op in self.operators
        ]
        return CheckpointMetadata(
            self.job_id,
            self.job_name,
            self.checkpoint_id,
            self.trigger_timestamp_ms,
            self.completion_timestamp_ms,
            operators,
            self.stats,
        )


_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(CheckpointMetadata)
_v1_decoder = msgspec.msgpack.Decoder(_V1CheckpointMetadata)


def encode_metadata(metadata: CheckpointMetadata) -> bytes:
    body = _encoder.encode(metadata)
    digest = hashlib.blake2b(body, digest_size=16).digest()
    return _HEADER.pack(MAGIC, FORMAT_VERSION, len(body), digest) + body


def decode_metadata(data: bytes, path: str) -> CheckpointMetadata:
    if len(data) < _HEADER.size:
        raise CorruptCheckpointError(path, f"truncated: {len(data)} bytes, header alone is 34")
    magic, version, length, digest = _HEADER.unpack_from(data)
    if magic != MAGIC:
        raise CorruptCheckpointError(path, "not a barrierflow checkpoint metadata file")
    if version > FORMAT_VERSION:
        raise CorruptCheckpointError(
            path,
            f"format version {version} is newer than this barrierflow reads "
            f"({FORMAT_VERSION}); upgrade barrierflow",
        )
    if version < _OLDEST_READABLE_VERSION:
        raise CorruptCheckpointError(
            path,
            f"format version {version} is older than this barrierflow reads (versions "
            f"{_OLDEST_READABLE_VERSION} to {FORMAT_VERSION})",
        )
    body = data[_HEADER.size :]
    if len(body) != length:
        raise CorruptCheckpointError(path, f"truncated: body has {len(body)} of {length} bytes")
    if hashlib.blake2b(body, digest_size=16).digest() != digest:
        raise CorruptCheckpointError(path, "checksum mismatch: the file was corrupted")
    try:
        if version == 1:
            return _v1_decoder.decode(body).upgrade()
        metadata = _decoder.decode(body)
    except msgspec.DecodeError as e:
        raise CorruptCheckpointError(path, f"undecodable body: {e}") from e
    for op in metadata.operators:
        if op.coordinator is not None and op.coordinator.format_version > COORDINATOR_STATE_VERSION:
            raise CorruptCheckpointError(
                path,
                f"the coordinator state of operator {op.uid!r} has layout version "
                f"{op.coordinator.format_version}, newer than this barrierflow reads "
                f"({COORDINATOR_STATE_VERSION}); upgrade barrierflow",
            )
    return metadata


def content_checksum(data: bytes | memoryview) -> str:
    return checksummer(data).hexdigest()


def checksummer(data: bytes | memoryview = b"") -> hashlib.blake2b:
    """The hash of state files (BLAKE2b-128), fed in chunks when files are streamed."""
    return hashlib.blake2b(data, digest_size=16)
