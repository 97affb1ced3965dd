"""barrierflow: stateful stream processing in Python on Apache Spark, with Flink's checkpointing."""

from barrierflow.api.checkpoint_config import (
    CheckpointConfig,
    CheckpointingMode,
    ConfigurationError,
)
from barrierflow.api.environment import JobClient, StreamExecutionEnvironment
from barrierflow.cluster.job_master import (
    JobCanceledError,
    JobExecutionError,
    JobExecutionResult,
    JobStatus,
)
from barrierflow.cluster.restart_strategy import RestartStrategies

__all__ = [
    "CheckpointConfig",
    "CheckpointingMode",
    "ConfigurationError",
    "JobCanceledError",
    "JobClient",
    "JobExecutionError",
    "JobExecutionResult",
    "JobStatus",
    "RestartStrategies",
    "StreamExecutionEnvironment",
]
