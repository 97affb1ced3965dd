"""State read and written as Spark DataFrames, with Flink's State Processor API names:
``SavepointReader`` reads a savepoint or a retained checkpoint, ``SavepointWriter`` bootstraps
and changes savepoints. A Spark job, not a stream job: one Spark task per range of key groups.

The names load lazily, and Spark only when a reader or writer runs: importing this package
loads no Spark.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

_EXPORTS = {
    "SavepointReader": "barrierflow.state_processor.savepoint_reader",
    "SavepointWriter": "barrierflow.state_processor.savepoint_writer",
    "OperatorTransformation": "barrierflow.state_processor.bootstrap",
    "BootstrapTransformation": "barrierflow.state_processor.bootstrap",
    "KeyedStateReaderFunction": "barrierflow.state_processor.functions",
    "KeyedStateBootstrapFunction": "barrierflow.state_processor.functions",
}

__all__ = [
    "BootstrapTransformation",
    "KeyedStateBootstrapFunction",
    "KeyedStateReaderFunction",
    "OperatorTransformation",
    "SavepointReader",
    "SavepointWriter",
]


def __getattr__(name: str) -> object:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'barrierflow.state_processor' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


if TYPE_CHECKING:
    from barrierflow.state_processor.bootstrap import (
        BootstrapTransformation,
        OperatorTransformation,
    )
    from barrierflow.state_processor.functions import (
        KeyedStateBootstrapFunction,
        KeyedStateReaderFunction,
    )
    from barrierflow.state_processor.savepoint_reader import SavepointReader
    from barrierflow.state_processor.savepoint_writer import SavepointWriter
