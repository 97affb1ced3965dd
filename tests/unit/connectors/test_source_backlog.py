"""What sources tell of their backlog (``SourceReader.backlog``), the autoscaler's input: a
number sequence its unread records, exactly; a file source its unread files, the enumerator's
not handed out added by the JobMaster; and what it read so far, in the same unit."""

from __future__ import annotations

from barrierflow.connectors.files.file_enumerator import FileSplitEnumerator
from barrierflow.connectors.files.file_split import FileSplit
from barrierflow.connectors.interfaces.source_reader import SourceReaderContext
from barrierflow.datastream.connectors.file_system import FileSource, StreamFormat
from barrierflow.datastream.connectors.number_seq import NumberSequenceSource
from barrierflow.protocol.source_backlog import SourceBacklog
from tests.unit.connectors.test_source_framework import Context

READER = SourceReaderContext("job", "src", 0, 1)


def drain(reader, max_records: int = 1000) -> list:
    out = []
    while (records := reader.poll(max_records)) is not None:
        out += records
        if not records:
            break
    return out


def test_a_number_sequence_tells_its_unread_records_once_it_has_its_split():
    source = NumberSequenceSource(1, 100)
    reader = source.create_reader(READER)
    assert reader.backlog() is None  # its split is still the enumerator's
    reader.add_splits(source.splits(1))
    reader.notify_no_more_splits()
    assert reader.backlog() == SourceBacklog("unread records", 100, 0)
    assert len(reader.poll(30)) == 30
    assert reader.backlog() == SourceBacklog("unread records", 70, 30)
    drain(reader)
    assert reader.backlog() == SourceBacklog("unread records", 0, 100)


def test_a_file_source_tells_its_unread_files_and_its_enumerator_those_not_handed_out(tmp_path):
    for name in "abc":
        (tmp_path / name).write_text(f"{name}1\n{name}2\n")
    files = [FileSplit(str(tmp_path / name)) for name in "abc"]
    context = Context(1, {0})
    enumerator = FileSplitEnumerator(context, files)
    assert enumerator.backlog() == 3
    source = FileSource.for_record_stream_format(
        StreamFormat.text_line_format(), str(tmp_path)
    ).build()
    reader = source.create_reader(READER)
    enumerator.handle_split_request(0)
    reader.add_splits(context.assigned[0])
    assert (enumerator.backlog(), reader.backlog()) == (2, SourceBacklog("unread files", 1, 0))
    assert reader.poll(10) == ["a1", "a2"]
    reader.poll(10)  # the file's end
    assert reader.backlog() == SourceBacklog("unread files", 0, 1)
