"""Every path a public name had before its one documented path (docs/public-api.md) still works
for one release: it warns (``DeprecationWarning``) naming the new path, and gives the very
object there; the new path loads without a warning; and nothing barrierflow loads for itself, an
executor's runtime or pickled state, goes through an old path.

``DEPRECATED`` lists them all, old face by old face; a face whose moved names differ from the
list fails the test, and so does a module that declares moved names and is not listed.
"""

from __future__ import annotations

import importlib
import pickle
import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "public-api.md"


def same(module: str, *names: str) -> dict[str, str]:
    """``names`` keep their name at ``module``."""
    return {n: f"{module}.{n}" for n in names}


DS = "barrierflow.datastream"
CONNECTORS = f"{DS}.connectors"
BASE = f"{CONNECTORS}.base"
KAFKA_NAMES = (
    "KafkaOffsetResetStrategy",
    "KafkaOffsetsInitializer",
    "KafkaRecordSerializationSchema",
    "KafkaRecordSerializationSchemaBuilder",
    "KafkaSink",
    "KafkaSinkBuilder",
    "KafkaSource",
    "KafkaSourceBuilder",
    "KafkaTopicPartition",
    "KafkaTopicSelector",
)
JSON_ROW = ("JsonRowDeserializationSchema", "JsonRowSerializationSchema")

# old face -> {old name: new path}
DEPRECATED: dict[str, dict[str, str]] = {
    # modules removed since the last release: their one name, at its new path
    "barrierflow.connectors.builtin.sequence_source": {
        "SequenceSource": f"{CONNECTORS}.number_seq.NumberSequenceSource",
    },
    "barrierflow.connectors.base.lazy_names": {"LazyNames": "barrierflow.lazy_names.LazyNames"},
    "barrierflow": {
        **same(DS, "CheckpointConfig", "CheckpointingMode", "StreamExecutionEnvironment"),
        **same(
            "barrierflow.common",
            "JobClient",
            "JobExecutionResult",
            "JobStatus",
            "RestartStrategies",
        ),
        **same(
            "barrierflow.errors",
            "ConfigurationError",
            "JobCanceledError",
            "JobExecutionError",
            "SavepointError",
        ),
        **same("barrierflow.common.job_client", "SavepointFormatType"),
    },
    "barrierflow.common": same("barrierflow.common.watermark_strategy", "TimestampAssigner"),
    "barrierflow.common.serialization": same(f"{DS}.formats.json", *JSON_ROW),
    DS: same(f"{DS}.functions", "AllWindowFunction", "ProcessAllWindowFunction"),
    CONNECTORS: same(f"{CONNECTORS}.file_system", "FileSink", "FileSource"),
    f"{CONNECTORS}.kafka": {
        "DeliveryGuarantee": f"{CONNECTORS}.DeliveryGuarantee",
        **same(f"{DS}.formats.json", *JSON_ROW),
        "SimpleStringSchema": "barrierflow.common.SimpleStringSchema",
    },
    "barrierflow.connectors": {
        "DeliveryGuarantee": f"{CONNECTORS}.DeliveryGuarantee",
        "DiscardingSink": f"{CONNECTORS}.discarding.DiscardingSink",
        **same(f"{CONNECTORS}.file_system", "FileSink", "FileSource"),
        "ParquetWriterFactory": f"{DS}.formats.parquet.ParquetWriterFactory",
        "SequenceSource": f"{CONNECTORS}.number_seq.NumberSequenceSource",
    },
    "barrierflow.connectors.files": {
        **same(
            f"{CONNECTORS}.file_system",
            "BucketAssigner",
            "BulkFormat",
            "FileSink",
            "FileSinkBuilder",
            "FileSource",
            "FileSourceBuilder",
            "OutputFileConfig",
            "OutputFileConfigBuilder",
            "RollingPolicy",
            "StreamFormat",
        ),
        "ParquetWriterFactory": f"{DS}.formats.parquet.ParquetWriterFactory",
    },
    "barrierflow.connectors.kafka": {
        **same(f"{CONNECTORS}.kafka", *KAFKA_NAMES),
        "DeliveryGuarantee": f"{CONNECTORS}.DeliveryGuarantee",
        **same(f"{DS}.formats.json", *JSON_ROW),
        "SimpleStringSchema": "barrierflow.common.SimpleStringSchema",
    },
    "barrierflow.connectors.postgres": same(
        f"{CONNECTORS}.postgres", "PostgresSink", "PostgresSinkError", "transaction_id_prefix"
    ),
    "barrierflow.connectors.delta": same(f"{CONNECTORS}.delta", "DeltaSink", "DeltaSource"),
    "barrierflow.connectors.iceberg": same(f"{CONNECTORS}.iceberg", "IcebergSink", "IcebergSource"),
    "barrierflow.connectors.spark_table": same(
        f"{CONNECTORS}.spark_table", "CatalogTable", "SparkTableSink", "TableCatalog"
    ),
    "barrierflow.connectors.jdbc": same(
        "barrierflow.connectors.postgres.jdbc",
        "POSTGRES_DRIVER",
        "JdbcConnection",
        "JdbcExecution",
        "jdbc_postgres_sink",
        "psycopg_statement",
    ),
    "barrierflow.connectors.source": {
        **same(
            BASE,
            "Boundedness",
            "Source",
            "SourceReader",
            "SourceReaderContext",
            "Split",
            "SplitEnumerator",
            "SplitEnumeratorContext",
            "SplitRun",
        ),
        "tells_splits": "barrierflow.connectors.interfaces.source_reader.tells_splits",
    },
    "barrierflow.connectors.sink": same(
        BASE,
        "CommitRetryPolicy",
        "Committable",
        "Committer",
        "CommitterContext",
        "GlobalCommitter",
        "JobSettings",
        "Recovery",
        "Sink",
        "SinkWriter",
        "SinkWriterContext",
    ),
    "barrierflow.connectors.source_reader": {
        **same(BASE, "SourceReader", "SourceReaderContext", "SplitRun"),
        "tells_splits": "barrierflow.connectors.interfaces.source_reader.tells_splits",
    },
    "barrierflow.connectors.split_enumerator": same(
        BASE, "Split", "SplitEnumerator", "SplitEnumeratorContext"
    ),
    "barrierflow.connectors.job_settings": same(BASE, "JobSettings"),
    "barrierflow.connectors.serialization": same(f"{DS}.formats.json", *JSON_ROW),
    "barrierflow.state": same(
        f"{DS}.state",
        "AggregatingState",
        "AggregatingStateDescriptor",
        "BroadcastState",
        "ListState",
        "ListStateDescriptor",
        "MapState",
        "MapStateDescriptor",
        "ReadOnlyBroadcastState",
        "ReducingState",
        "ReducingStateDescriptor",
        "State",
        "StateDescriptor",
        "StateTtlConfig",
        "ValueState",
        "ValueStateDescriptor",
    ),
    "barrierflow.windowing.assigners": same(
        f"{DS}.window",
        "CountSlidingWindowAssigner",
        "CountTumblingWindowAssigner",
        "DynamicEventTimeSessionWindows",
        "DynamicProcessingTimeSessionWindows",
        "EventTimeSessionWindows",
        "GlobalWindows",
        "MergingWindowAssigner",
        "ProcessingTimeSessionWindows",
        "SessionWindowTimeGapExtractor",
        "SlidingEventTimeWindows",
        "SlidingProcessingTimeWindows",
        "TumblingEventTimeWindows",
        "TumblingProcessingTimeWindows",
        "WindowAssigner",
    ),
    "barrierflow.windowing.triggers": same(
        f"{DS}.window",
        "ContinuousEventTimeTrigger",
        "ContinuousProcessingTimeTrigger",
        "CountEvictor",
        "CountTrigger",
        "EventTimeTrigger",
        "NeverTrigger",
        "ProcessingTimeTrigger",
        "PurgingTrigger",
        "Trigger",
        "TriggerResult",
    ),
}
OLD_PATHS = sorted(
    (face, name, new) for face, moved in DEPRECATED.items() for name, new in moved.items()
)


def at(path: str) -> object:
    """The object at a new path, which must load without any warning."""
    module, _, name = path.rpartition(".")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return getattr(importlib.import_module(module), name)


@pytest.mark.parametrize(("face", "name", "new"), OLD_PATHS)
def test_an_old_path_warns_naming_the_new_one_and_gives_its_object(face, name, new):
    module = importlib.import_module(face)
    message = re.escape(f"{face}.{name} is deprecated: use {new}")
    with pytest.warns(DeprecationWarning, match=message):
        old = getattr(module, name)
    assert old is at(new)


def test_each_use_of_an_old_path_warns_again_pointing_at_the_code_that_used_it():
    import barrierflow.connectors as connectors

    for _ in range(2):
        with pytest.warns(DeprecationWarning, match="NumberSequenceSource") as caught:
            connectors.SequenceSource  # noqa: B018
        assert caught[0].filename == __file__


def test_a_star_import_of_an_old_face_still_gives_its_names_with_warnings():
    namespace: dict[str, object] = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        exec("from barrierflow.state import *", namespace)
    assert {w.category for w in caught} == {DeprecationWarning}
    assert any("barrierflow.state.ValueStateDescriptor" in str(w.message) for w in caught)
    assert namespace["ValueStateDescriptor"] is at(f"{DS}.state.ValueStateDescriptor")


def _faces_in_the_code() -> set[str]:
    faces = set()
    for path in (ROOT / "barrierflow").rglob("*.py"):
        if "MovedNames(" in path.read_text() and path != ROOT / "barrierflow" / "lazy_names.py":
            parts = path.relative_to(ROOT).with_suffix("").parts
            faces.add(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return faces


def test_the_list_is_every_old_path_the_code_serves():
    assert _faces_in_the_code() == set(DEPRECATED), "a face that moves names is not listed here"
    for face, moved in DEPRECATED.items():
        table = importlib.import_module(face)._MOVED
        assert {n: table.new_path(n) for n in table.names()} == moved, face


def test_the_public_api_document_names_every_old_face():
    deprecated = DOC.read_text().split("## Deprecated paths", 1)[1]
    for face in DEPRECATED:
        short = face.rpartition(".")[2]
        assert f"`{face}." in deprecated or f"`.{short}" in deprecated, face


def test_an_unknown_name_of_an_old_face_is_refused():
    import barrierflow.state

    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        barrierflow.state.Nope  # noqa: B018


def test_state_pickled_by_earlier_versions_unpickles_without_a_warning():
    """Pickles name the defining modules, some of them an earlier version's (``barrierflow.row``),
    never a face."""
    from barrierflow.common import Row
    from barrierflow.datastream import TimeWindow
    from barrierflow.datastream.state import ValueStateDescriptor

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert pickle.loads(b"cbarrierflow.row\nRow\n.") is Row
        assert pickle.loads(b"cbarrierflow.windowing.windows\nTimeWindow\n.") is TimeWindow
        descriptor = pickle.loads(pickle.dumps(ValueStateDescriptor("count")))
        window = pickle.loads(pickle.dumps(TimeWindow(0, 10)))
    assert descriptor.name == "count" and window == TimeWindow(0, 10)


@pytest.mark.parametrize(
    "statement",
    [
        "import barrierflow.runtime.task_executor, barrierflow.runtime.task",
        "import barrierflow.cli",
        "import barrierflow.datastream.functions, barrierflow.datastream.window",
        "from barrierflow.datastream import StreamExecutionEnvironment;"
        "StreamExecutionEnvironment().from_collection([1]).map(str).print()",
    ],
)
def test_barrierflow_itself_uses_no_old_path(statement):
    subprocess.run(
        [sys.executable, "-W", "error::DeprecationWarning", "-c", statement],
        check=True,
        cwd=ROOT,
        capture_output=True,
    )
