"""PyFlink's ``pyflink.common`` names, at the same path: a PyFlink program changes only its
imports. Each name is defined once, in barrierflow's own modules, and re-exported here; those
of the API and the connectors load when first asked for (module ``__getattr__``), so that an
executor unpickling a function that uses ``Types`` or ``Row`` loads neither.

``TimestampAssigner`` here is deprecated (PyFlink has it in ``common.watermark_strategy``
only): it warns and gives that one."""

from __future__ import annotations

from typing import Any

from barrierflow.common.time import Duration, Instant, Time
from barrierflow.common.typeinfo import TypeInformation, Types
from barrierflow.common.types import Row, RowKind
from barrierflow.common.watermark_strategy import WatermarkStrategy
from barrierflow.lazy_names import LazyNames, MovedNames

_NAMES = LazyNames(
    __name__,
    {
        "ByteArraySchema": "barrierflow.common.serialization",
        "CompletableFuture": "barrierflow.api.completable_future",
        "Configuration": "barrierflow.api.configuration",
        "DeserializationSchema": "barrierflow.common.serialization",
        "Encoder": "barrierflow.connectors.files.file_format",
        "ExecutionConfig": "barrierflow.api.execution_config",
        "JobClient": "barrierflow.api.job_client",
        "JobExecutionResult": "barrierflow.cluster.job_outcome",
        "JobID": "barrierflow.cluster.job_outcome",
        "JobStatus": "barrierflow.cluster.job_outcome",
        "RestartStrategies": "barrierflow.api.restart_strategies",
        "RestartStrategyConfiguration": "barrierflow.api.restart_strategies",
        "SerializationSchema": "barrierflow.common.serialization",
        "SimpleStringSchema": "barrierflow.connectors.serialization",
        "TypeSerializer": "barrierflow.windowing.serializers",
    },
)
_MOVED = MovedNames(
    __name__,
    {"TimestampAssigner": "barrierflow.common.watermark_strategy.TimestampAssigner"},
)

__all__ = [
    "ByteArraySchema",
    "CompletableFuture",
    "Configuration",
    "DeserializationSchema",
    "Duration",
    "Encoder",
    "ExecutionConfig",
    "Instant",
    "JobClient",
    "JobExecutionResult",
    "JobID",
    "JobStatus",
    "RestartStrategies",
    "RestartStrategyConfiguration",
    "Row",
    "RowKind",
    "SerializationSchema",
    "SimpleStringSchema",
    "Time",
    "TypeInformation",
    "TypeSerializer",
    "Types",
    "WatermarkStrategy",
]


def __getattr__(name: str) -> Any:
    if name in _MOVED:
        return _MOVED.get(name)
    return _NAMES.get(name, globals())


def __dir__() -> list[str]:
    return _NAMES.listing(globals())
