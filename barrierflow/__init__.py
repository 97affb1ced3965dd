"""barrierflow: stateful stream processing in Python on Apache Spark, with Flink's checkpointing.

``from barrierflow import StreamExecutionEnvironment`` is the public entry. The names load
lazily (module ``__getattr__``): an executor that imports the runtime must not load the API,
the JobMaster, YAML or Spark's driver side with it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

# public name -> the module that defines it
_EXPORTS = {
    "CheckpointConfig": "barrierflow.api.checkpoint_config",
    "CheckpointingMode": "barrierflow.api.checkpoint_config",
    "ConfigurationError": "barrierflow.errors",
    "JobCanceledError": "barrierflow.cluster.job_outcome",
    "JobClient": "barrierflow.api.job_client",
    "JobExecutionError": "barrierflow.cluster.job_outcome",
    "JobExecutionResult": "barrierflow.cluster.job_outcome",
    "JobStatus": "barrierflow.cluster.job_outcome",
    "RestartStrategies": "barrierflow.api.restart_strategies",
    "SavepointError": "barrierflow.cluster.job_outcome",
    "SavepointFormatType": "barrierflow.api.job_client",
    "StreamExecutionEnvironment": "barrierflow.api.environment",
}

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
    "SavepointError",
    "SavepointFormatType",
    "StreamExecutionEnvironment",
]


def __getattr__(name: str) -> object:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'barrierflow' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # the next access does not come here
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])


if TYPE_CHECKING:
    from barrierflow.api.checkpoint_config import CheckpointConfig, CheckpointingMode
    from barrierflow.api.environment import StreamExecutionEnvironment
    from barrierflow.api.job_client import JobClient, SavepointFormatType
    from barrierflow.api.restart_strategies import RestartStrategies
    from barrierflow.cluster.job_outcome import (
        JobCanceledError,
        JobExecutionError,
        JobExecutionResult,
        JobStatus,
        SavepointError,
    )
    from barrierflow.errors import ConfigurationError
