"""FileSource's CSV, Avro and Parquet formats and FileSink's CSV, Avro, Parquet and ORC part
files: what a writer writes, a reader reads back; a reader restored at the position it
reported resumes at the next record; a record or a file that does not fit fails naming it."""

from __future__ import annotations

import datetime

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.orc as orc
import pytest

from barrierflow.common import Types
from barrierflow.common.serialization import BulkWriterFactory
from barrierflow.common.types import Row
from barrierflow.connectors.files.file_format import RecordEncodingError
from barrierflow.datastream.connectors.file_system import FileSource
from barrierflow.datastream.formats.avro import AvroBulkWriters, AvroInputFormat, AvroSchema
from barrierflow.datastream.formats.csv import CsvBulkWriters, CsvReaderFormat, CsvSchema
from barrierflow.datastream.formats.orc import OrcBulkWriters
from barrierflow.datastream.formats.parquet import (
    AvroParquetReaders,
    AvroParquetWriters,
    ParquetBulkWriters,
    ParquetColumnarRowInputFormat,
)
from barrierflow.errors import ConfigurationError
from barrierflow.graph.transformation import TransformationKind
from barrierflow.testing.harness import OperatorHarness, operator

FS = pafs.LocalFileSystem()
ROW_TYPE = Types.ROW_NAMED(
    ["id", "name", "at"], [Types.INT(), Types.STRING(), Types.SQL_TIMESTAMP()]
)
AT = datetime.datetime(2026, 1, 31, 12, 30)
AVRO = AvroSchema.parse_string(
    '{"type":"record","name":"User","fields":[{"name":"id","type":"int"},'
    '{"name":"name","type":["null","string"]}]}'
)


def named(names: str, *values) -> Row:
    row = Row(*values)
    row.set_field_names(names.split())
    return row


def write_part(factory, path, batches) -> None:
    with open(path, "wb") as file:
        part = factory.open_part(file)
        for batch in batches:
            part.add(batch)
        part.finish()


def read_all(record_format, path, position=0, max_records=2):
    """Every record from ``position``, and each position the reader reported after a read."""
    split = record_format.open_split(FS, str(path), position)
    records, positions = [], []
    while batch := split.read(max_records):
        records += batch
        positions.append(split.position)
    split.close()
    return records, positions


def resumes_everywhere(record_format, path) -> None:
    everything, positions = read_all(record_format, path)
    for done, position in enumerate(positions):
        rest, _ = read_all(record_format, path, position)
        assert rest == everything[2 * (done + 1) :], position


def csv_schema():
    return (
        CsvSchema.builder()
        .add_number_column("id", Types.INT())
        .add_string_column("name")
        .add_array_column("tags", ",", Types.STRING())
        .set_column_separator("|")
        .set_use_header()
        .set_strict_headers()
        .build()
    )


def test_csv_part_files_read_back_through_csv_reader_format(tmp_path):
    schema = csv_schema()
    path = tmp_path / "part.csv"
    records = [(1, "a", ["x", "y"]), (2, "line\nbreak", []), (3, None, ["z"]), (4, "d", ["w"])]
    write_part(CsvBulkWriters.for_schema(schema), path, [records[:2], records[2:]])
    assert path.read_bytes().startswith(b'"id"|"name"|"tags"\n1|"a"|"x,y"\n')
    read, _ = read_all(CsvReaderFormat.for_schema(schema), path)
    names = "id name tags"
    assert read == [
        named(names, 1, "a", ["x", "y"]),
        named(names, 2, "line\nbreak", None),  # an empty field of a non-text type is null
        named(names, 3, "", ["z"]),
        named(names, 4, "d", ["w"]),
    ]
    resumes_everywhere(CsvReaderFormat.for_schema(schema), path)


def test_csv_reader_names_the_record_that_does_not_fit_and_checks_the_header(tmp_path):
    schema = csv_schema()
    path = tmp_path / "in.csv"
    path.write_text("id|name|tags\n1|a|x\nnot a number|b|y\n")
    with pytest.raises(ValueError, match=r"record at byte 19.*field 'id'"):
        read_all(CsvReaderFormat.for_schema(schema), path, max_records=10)
    path.write_text("name|id|tags\n1|a|x\n")
    with pytest.raises(ValueError, match="header"):
        read_all(CsvReaderFormat.for_schema(schema), path)


def test_csv_writer_names_the_record_it_cannot_write(tmp_path):
    with pytest.raises(RecordEncodingError, match=r"record \('x', 'a', \[\]\)"):
        write_part(CsvBulkWriters.for_schema(csv_schema()), tmp_path / "p", [[("x", "a", [])]])


def test_avro_part_files_read_back_through_avro_input_format(tmp_path):
    path = tmp_path / "part.avro"
    factory = AvroBulkWriters.for_generic_record(AVRO)
    records = [{"id": i, "name": None if i == 2 else f"n{i}"} for i in range(5)]
    write_part(factory, path, [records[:3], [Row(3, "n3"), (4, "n4")]])
    source = AvroInputFormat(str(path), AVRO).as_source()
    assert isinstance(source, FileSource)
    read, _ = read_all(source.record_format, path)
    assert read == records
    resumes_everywhere(source.record_format, path)


def test_avro_writer_and_reader_refuse_what_does_not_fit(tmp_path):
    with pytest.raises(RecordEncodingError, match=r"User.id is <x>"):
        write_part(AvroBulkWriters.for_generic_record(AVRO), tmp_path / "p", [[("x", "a")]])
    bad = tmp_path / "bad.avro"
    bad.write_bytes(b"Obj\x01garbage")
    with pytest.raises(ValueError, match="not an Avro container file"):
        read_all(AvroInputFormat(str(bad), AVRO).as_source().record_format, bad)


def test_parquet_row_type_writes_and_columnar_format_reads_rows(tmp_path):
    path = tmp_path / "part.parquet"
    factory = ParquetBulkWriters.for_row_type(ROW_TYPE)
    factory.row_group_size = 2  # several row groups, for the restored reader to skip
    records = [Row(i, f"n{i}", AT) for i in range(5)]
    write_part(factory, path, [records[:3], records[3:]])
    record_format = ParquetColumnarRowInputFormat(ROW_TYPE, batch_size=2)
    read, _ = read_all(record_format, path)
    assert read == [named("id name at", i, f"n{i}", AT) for i in range(5)]
    resumes_everywhere(record_format, path)
    other = Types.ROW_NAMED(["missing"], [Types.INT()])
    with pytest.raises(ValueError, match="no column 'missing'"):
        read_all(ParquetColumnarRowInputFormat(other), path)


def test_avro_parquet_writers_and_readers_keep_generic_records(tmp_path):
    path = tmp_path / "part.parquet"
    records = [{"id": 1, "name": "a"}, {"id": 2, "name": None}, {"id": 3, "name": "c"}]
    write_part(AvroParquetWriters.for_generic_record(AVRO), path, [records])
    read, _ = read_all(AvroParquetReaders.for_generic_record(AVRO), path)
    assert read == records
    resumes_everywhere(AvroParquetReaders.for_generic_record(AVRO), path)


def test_orc_part_files_hold_the_rows(tmp_path):
    path = tmp_path / "part.orc"
    factory = OrcBulkWriters.for_row_type(ROW_TYPE, {"orc.compress": "ZLIB"})
    write_part(factory, path, [[Row(1, "a", AT), (2, "b", AT)]])
    table = orc.read_table(str(path))
    assert table.to_pylist() == [
        {"id": 1, "name": "a", "at": AT},
        {"id": 2, "name": "b", "at": AT},
    ]
    with pytest.raises(ConfigurationError, match=r"orc\.bloom"):
        OrcBulkWriters.for_row_type(ROW_TYPE, {"orc.bloom.filter.columns": "id"})


def test_every_writer_is_a_bulk_writer_factory_and_hadoop_settings_are_refused():
    for factory in (
        CsvBulkWriters.for_schema(csv_schema()),
        AvroBulkWriters.for_generic_record(AVRO),
        ParquetBulkWriters.for_row_type(ROW_TYPE),
        OrcBulkWriters.for_row_type(ROW_TYPE),
    ):
        assert isinstance(factory, BulkWriterFactory)
    with pytest.raises(ConfigurationError, match="Hadoop"):
        ParquetBulkWriters.for_row_type(ROW_TYPE, {"fs.defaultFS": "hdfs://nn"})
    assert ParquetBulkWriters.for_row_type(pa.schema([("a", pa.int8())])).schema.names == ["a"]


def source_harness(source) -> OperatorHarness:
    (h,) = OperatorHarness.subtasks(operator(TransformationKind.SOURCE, source), 1)
    return h


def drain(h: OperatorHarness) -> list:
    out: list = []
    while (batch := h.poll(100)) is not None:
        out += batch
    return out


@pytest.mark.parametrize("kind", ["csv", "parquet", "avro"])
def test_a_file_source_of_a_format_restored_mid_file_reads_each_record_once(tmp_path, kind):
    schema = csv_schema()
    records = [Row(i, f"n{i}", [f"t{i}"]) for i in range(50)]
    if kind == "csv":
        write_part(CsvBulkWriters.for_schema(schema), tmp_path / "in.csv", [records])
        source = FileSource.for_record_stream_format(
            CsvReaderFormat.for_schema(schema), str(tmp_path)
        ).build()
    elif kind == "parquet":
        factory = ParquetBulkWriters.for_row_type(schema.row_type)
        factory.row_group_size = 7
        write_part(factory, tmp_path / "in.parquet", [records])
        source = FileSource.for_bulk_file_format(
            ParquetColumnarRowInputFormat(schema.row_type, batch_size=5), str(tmp_path)
        ).build()
    else:
        records = [{"id": i, "name": f"n{i}"} for i in range(50)]
        write_part(AvroBulkWriters.for_generic_record(AVRO), tmp_path / "in.avro", [records])
        source = AvroInputFormat(str(tmp_path), AVRO).as_source()
    h = source_harness(source)
    first = h.poll(23)
    state = h.snapshot(1)
    h.close()
    resumed = h.restored(state)
    read = first + drain(resumed)
    resumed.close()
    plain = [dict(r) if isinstance(r, dict) else list(r) for r in read]
    expected = [dict(r) if isinstance(r, dict) else list(r) for r in records]
    assert len(first) == 23 and plain == expected
