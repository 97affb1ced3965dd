"""What one subtask needs to run: built by the JobMaster, shipped to the slot in the Spark
closure (so everything here must pickle). Performs no I/O."""

from __future__ import annotations

from dataclasses import dataclass, field

from barrierflow.checkpoint.file_systems import FileSystemSettings
from barrierflow.checkpoint.restore import OperatorRestore
from barrierflow.graph.execution_graph import OutputPlan
from barrierflow.runtime.network.buffer_debloater import DebloatSettings
from barrierflow.runtime.network.channel_faults import ChannelFaultHook
from barrierflow.runtime.operators import OperatorSpec
from barrierflow.state.backends import StateBackendConfig


@dataclass(frozen=True)
class TaskConfig:
    """The same for every subtask of a job."""

    buffer_size: int
    buffer_timeout_s: float
    initial_credit: int
    checkpointing: bool
    exactly_once: bool
    storage_uri: str | None  # this job's root: <checkpoint-dir>/<job-id>
    inline_threshold: int
    write_buffer_size: int
    max_parallelism: int
    state_backend: StateBackendConfig
    unaligned_checkpoints: bool = False  # barriers may overtake data in flight
    aligned_checkpoint_timeout_ms: int = 0  # > 0: checkpoints start aligned
    auto_watermark_interval_ms: int = 200  # how often timestamp assigners emit watermarks
    job_parameters: dict[str, str] = field(default_factory=dict)  # global job parameters
    # s3.* settings: every executor initializes its file systems with them before a subtask
    # opens storage (checkpoints, restores, file connectors); the secret key is never printed
    file_systems: FileSystemSettings = field(default_factory=FileSystemSettings)
    # a test's hook that cuts connections between slots (network/channel_faults.py); None
    channel_faults: ChannelFaultHook | None = None
    # buffer debloating (network/buffer_debloater.py); None: off, every buffer buffer_size
    buffer_debloat: DebloatSettings | None = None


@dataclass(frozen=True)
class TaskDescriptor:
    job_id: str
    job_name: str
    attempt: int
    token: int
    vertex: str
    vertex_name: str
    subtask: int
    parallelism: int
    chain: tuple[OperatorSpec, ...]
    num_input_channels: int
    outputs: tuple[OutputPlan, ...]
    config: TaskConfig
    restore_uri: str | None  # job root of the checkpoint restored from
    restore: dict[str, OperatorRestore] | None  # operator uid -> state
    # For a head operator with two inputs: the input (0 or 1) of each input channel, by the
    # job edge the channel belongs to; empty for one input.
    input_of_channel: tuple[int, ...] = ()

    @property
    def name(self) -> str:
        return f"{self.vertex_name} ({self.subtask + 1}/{self.parallelism})"
