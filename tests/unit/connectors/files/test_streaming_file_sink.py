"""StreamingFileSink as PyFlink builds it: FileSink's part files, written through add_sink;
and FileSource's enumerator and split assigner providers."""

from __future__ import annotations

import logging

import pyarrow as pa
import pytest

from barrierflow.common import Types
from barrierflow.common.serialization import Encoder
from barrierflow.connectors.files.parquet import ParquetWriterFactory
from barrierflow.datastream import StreamExecutionEnvironment
from barrierflow.datastream.connectors.file_system import (
    BucketAssigner,
    FileEnumeratorProvider,
    FileSink,
    FileSource,
    FileSplitAssignerProvider,
    OutputFileConfig,
    RollingPolicy,
    StreamFormat,
    StreamingFileSink,
)
from barrierflow.graph.transformation import TransformationKind
from tests.unit.connectors.files.test_pyflink_file_connectors import (
    commit,
    drain,
    sink_writer,
    source_harness,
    visible,
    write,
)


def streaming_sink(directory) -> StreamingFileSink:
    with pytest.warns(DeprecationWarning, match="Use FileSink instead"):
        return (
            StreamingFileSink.for_row_format(directory, Encoder.simple_string_encoder())
            .with_output_file_config(
                OutputFileConfig.builder().with_part_prefix("pre").with_part_suffix(".txt").build()
            )
            .with_rolling_policy(RollingPolicy.on_checkpoint_rolling_policy())
            .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner())
            .with_bucket_check_interval(1000)
            .build()
        )


def test_a_row_format_streaming_file_sink_writes_filesinks_part_files(tmp_path):
    sink = streaming_sink(str(tmp_path)).wrapped_sink
    assert isinstance(sink, FileSink)
    w = sink_writer(sink)
    w.write(["a", "b"])
    commit(sink, w.prepare_commit(2))
    (name,) = visible(tmp_path)
    assert name.startswith("pre-0-000002-") and name.endswith(".txt")
    assert (tmp_path / name).read_text() == "a\nb\n"


def test_add_sink_writes_a_streaming_file_sink_through_its_file_sink(tmp_path):
    env = StreamExecutionEnvironment.get_execution_environment()
    sink = streaming_sink(str(tmp_path))
    written = env.from_collection(["a"], Types.STRING()).add_sink(sink)
    assert written._transformation.kind is TransformationKind.SINK
    assert written._transformation.function is sink.wrapped_sink


def test_a_bulk_format_streaming_file_sink_is_filesinks_bulk_format(tmp_path):
    factory = ParquetWriterFactory(pa.schema([("v", pa.int64())]))
    with pytest.warns(DeprecationWarning):
        sink = StreamingFileSink.for_bulk_format(str(tmp_path), factory).build()
    assert sink.wrapped_sink.file_format is factory


def test_an_encoder_that_is_none_is_refused():
    with pytest.raises(ValueError, match="FileSink needs an encoder"):
        StreamingFileSink.for_row_format("/out", None)


@pytest.mark.parametrize(
    "enumerator",
    [
        FileEnumeratorProvider.default_non_splittable_file_enumerator(),
        FileEnumeratorProvider.default_splittable_file_enumerator(),
    ],
)
def test_either_enumerator_reads_every_visible_file_once(tmp_path, enumerator):
    write(tmp_path / "d" / "1.txt", "a", "b")
    write(tmp_path / "d" / "sub" / "2.txt", "c")
    write(tmp_path / "d" / "_hidden", "no")
    write(tmp_path / "d" / ".bucket" / "3.txt", "no")
    source = (
        FileSource.for_record_stream_format(StreamFormat.text_line_format(), str(tmp_path / "d"))
        .set_file_enumerator(enumerator)
        .set_split_assigner(FileSplitAssignerProvider.locality_aware_split_assigner())
        .build()
    )
    lines = [line for h in source_harness(source, 2) for line in drain(h)]
    assert sorted(lines) == ["a", "b", "c"]


def test_the_splittable_enumerator_says_a_bulk_format_file_is_read_whole(caplog):
    from barrierflow.datastream.formats.parquet import ParquetColumnarRowInputFormat

    builder = FileSource.for_bulk_file_format(
        ParquetColumnarRowInputFormat(Types.ROW_NAMED(["v"], [Types.LONG()])), "/in"
    )
    with caplog.at_level(logging.INFO, logger="barrierflow.connectors.files"):
        builder.set_file_enumerator(FileEnumeratorProvider.default_splittable_file_enumerator())
    assert "as one split" in caplog.text


def test_providers_of_another_kind_are_refused():
    builder = FileSource.for_record_stream_format(StreamFormat.text_line_format(), "/in")
    with pytest.raises(ValueError, match="set_file_enumerator"):
        builder.set_file_enumerator("splittable")
    with pytest.raises(ValueError, match="set_split_assigner"):
        builder.set_split_assigner(None)
