"""barrierflow: stateful stream processing in Python on Apache Spark, with Flink's checkpointing.

Each public name has one import path (docs/public-api.md): PyFlink's, for the names PyFlink has
(``barrierflow.datastream``, ``barrierflow.common`` and their modules, as ``pyflink.X`` is
``barrierflow.X``); barrierflow's own connectors under ``barrierflow.datastream.connectors``;
``barrierflow.state_processor``; the errors a program catches in ``barrierflow.errors``. The
root package holds none of them.

The names it offered before (``from barrierflow import StreamExecutionEnvironment``) are
deprecated: each warns, naming its path, and gives the object there. Nothing loads until a name
is used (module ``__getattr__``): an executor that imports the runtime must not load the API,
the JobMaster, YAML or Spark's driver side with it.
"""

from __future__ import annotations

from typing import Any

from barrierflow.lazy_names import MovedNames

_MOVED = MovedNames(
    __name__,
    {
        **{
            n: f"barrierflow.datastream.{n}"
            for n in ("CheckpointConfig", "CheckpointingMode", "StreamExecutionEnvironment")
        },
        **{
            n: f"barrierflow.common.{n}"
            for n in ("JobClient", "JobExecutionResult", "JobStatus", "RestartStrategies")
        },
        **{
            n: f"barrierflow.errors.{n}"
            for n in (
                "ConfigurationError",
                "JobCanceledError",
                "JobExecutionError",
                "SavepointError",
            )
        },
        "SavepointFormatType": "barrierflow.common.job_client.SavepointFormatType",
    },
)

__all__ = _MOVED.names()  # ``from barrierflow import *`` keeps working, with a warning per name


def __getattr__(name: str) -> Any:
    return _MOVED.get(name)
