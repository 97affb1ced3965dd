"""What the environment's source methods declare (``from_source``, ``from_collection``,
``from_spark``, ``add_source``, ``create_input``): their arguments checked as PyFlink takes
them, and the source transformation they add to the program.

**I/O:** none but ``from_spark``'s default staging directory, made empty; the DataFrame's
files are written when its source is checked, before the job starts.
"""

from __future__ import annotations

import functools
import tempfile
from typing import Any

from barrierflow.common.typeinfo import checked_type
from barrierflow.connectors.builtin.collection_source import CollectionSource
from barrierflow.connectors.interfaces.source import Source
from barrierflow.datastream.functions.one_input import SourceFunction
from barrierflow.declared_types.conversion import IntegerOverflow, value_converter
from barrierflow.errors import ConfigurationError
from barrierflow.eventtime.watermark_strategy import WatermarkStrategy
from barrierflow.graph.transformation import Transformation, TransformationKind

# from_source's second argument: a strategy, or the source's name (from_source(source, name))
WatermarkArgument = WatermarkStrategy | str | None


def source_transformation(
    source: Any,
    watermark_strategy: WatermarkArgument,
    source_name: str | None,
    type_info: Any,
) -> Transformation:
    """``from_source(source, watermark_strategy, source_name, type_info)``, or
    ``from_source(source, source_name)``."""
    type_info = checked_type(type_info, "from_source()")
    if not isinstance(source, Source):
        raise ConfigurationError(
            "from_source() needs a source such as NumberSequenceSource or FileSource, "
            f"got {source!r}"
        )
    if isinstance(watermark_strategy, str) and source_name is None:
        watermark_strategy, source_name = None, watermark_strategy
    if watermark_strategy is not None and not isinstance(watermark_strategy, WatermarkStrategy):
        raise ConfigurationError(
            "from_source() takes a WatermarkStrategy (from barrierflow.common) as its second "
            f"argument, or the source's name, got {watermark_strategy!r}"
        )
    if watermark_strategy is not None and not (
        watermark_strategy.generates_watermarks or watermark_strategy.timestamp_assigner
    ):
        watermark_strategy = None  # no_watermarks(): nothing to do after the source
    return Transformation(
        TransformationKind.SOURCE,
        source_name or "Source",
        [],
        source,
        watermark_strategy=watermark_strategy,
        output_type=type_info,
    )


def collection_transformation(collection: Any, type_info: Any) -> Transformation:
    """``from_collection``: with ``type_info``, the values converted to it, as PyFlink
    converts them; read by one subtask, as PyFlink's, so that they keep their order."""
    type_info = checked_type(type_info, "from_collection()")
    # PyFlink hands the values to Java as they are: a BYTE, SHORT or INT out of range
    # wraps as Java's cast does
    convert = None if type_info is None else value_converter(type_info, IntegerOverflow.WRAP)
    try:
        if convert is not None:
            collection = [convert(value) for value in collection]
        source = CollectionSource(collection)
    except TypeError as e:
        raise ConfigurationError(f"from_collection(): {e}") from None
    t = source_transformation(source, "Collection Source", None, None)
    t.output_type = type_info
    t.parallelism = 1
    t.non_parallel = True
    return t


def dataframe_source(df: Any, staging_dir: str | None) -> Source:
    """``from_spark``: a source of the DataFrame's rows, read from the Parquet files a Spark
    job writes under ``staging_dir`` (default: a new local temporary directory)."""
    from pyspark.sql import DataFrame

    from barrierflow.cluster.spark.dataframe_staging import stage_dataframe
    from barrierflow.connectors.tables.staged_files_source import StagedFilesSource

    if not isinstance(df, DataFrame):
        raise ConfigurationError(f"from_spark() takes a Spark DataFrame, not {type(df).__name__}")
    directory = staging_dir or tempfile.mkdtemp(prefix="barrierflow-from-spark-")
    return StagedFilesSource(
        functools.partial(stage_dataframe, df, directory),
        f"from_spark -> {directory}",
        temporary_dir=None if staging_dir else directory,  # a directory given is the user's
    )


def unwrapped_source(source_func: Any) -> Any:
    """``add_source`` takes a source, or a ``SourceFunction`` wrapping one."""
    if isinstance(source_func, SourceFunction):
        return source_func.wrapped_source
    return source_func


def input_format_source(input_format: Any, type_info: Any) -> tuple[Source, Any]:
    """``create_input``: (a bounded source of the input format's records, their type)."""
    as_source = getattr(input_format, "as_source", None)
    if as_source is None:
        raise ConfigurationError(
            f"create_input() takes an input format barrierflow reads in Python, such as "
            f"AvroInputFormat(path, schema); {input_format!r:.100} would be a Java input "
            "format, which needs the JVM: read files with FileSource instead"
        )
    if type_info is None:
        type_info = input_format.get_produced_type()
    return as_source(), type_info
