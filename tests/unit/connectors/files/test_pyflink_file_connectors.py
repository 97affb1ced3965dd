"""FileSource and FileSink as PyFlink programs build them, on real files in tmp_path: several
paths, new files found while running (read once, across a restore at another parallelism),
text line encoding, part file names from OutputFileConfig, rolling within a checkpoint that
stays exactly once, and clear errors for bad arguments."""

from __future__ import annotations

import os
import time

import pytest

from barrierflow.common import Duration
from barrierflow.common.serialization import Encoder
from barrierflow.connectors.files.file_committable import FileCommittable
from barrierflow.connectors.files.file_committer import FileCommitter
from barrierflow.connectors.files.file_format import RecordEncodingError
from barrierflow.connectors.interfaces.committables import Committable, Recovery
from barrierflow.datastream.connectors.base import SinkWriterContext
from barrierflow.datastream.connectors.file_system import (
    BucketAssigner,
    FileSink,
    FileSource,
    OutputFileConfig,
    RollingPolicy,
    StreamFormat,
)
from barrierflow.graph.transformation import TransformationKind
from barrierflow.testing.harness import OperatorHarness, operator


def write(path, *lines: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.writelines(f"{line}\n" for line in lines)


def source_harness(source, parallelism=1) -> list[OperatorHarness]:
    return OperatorHarness.subtasks(operator(TransformationKind.SOURCE, source), parallelism)


def drain(h: OperatorHarness, idle_polls: int = 3) -> list[str]:
    """What the subtask reads until its end, or until it found nothing ``idle_polls`` times
    running (a monitored source never ends)."""
    out: list[str] = []
    idle = 0
    while idle < idle_polls and (batch := h.poll(100)) is not None:
        out += batch
        idle = 0 if batch else idle + 1
    return out


# --- FileSource ---------------------------------------------------------------------------------


def test_a_bounded_file_source_reads_every_path_once_and_ends(tmp_path):
    write(tmp_path / "a" / "1.txt", "a1", "a2")
    write(tmp_path / "a" / ".hidden", "no")
    write(tmp_path / "b.txt", "b1")
    source = FileSource.for_record_stream_format(
        StreamFormat.text_line_format(), str(tmp_path / "a"), str(tmp_path / "b.txt")
    ).build()
    assert source.is_bounded()
    lines = []
    for h in source_harness(source, 2):
        lines += drain(h)
        assert h.poll(100) is None  # ended
    assert sorted(lines) == ["a1", "a2", "b1"]


def test_a_monitored_source_reads_new_files_once_and_never_ends(tmp_path):
    inbox = tmp_path / "in"
    write(inbox / "1.txt", "one")
    source = (
        FileSource.for_record_stream_format(StreamFormat.text_line_format(), str(inbox))
        .monitor_continuously(Duration.of_millis(1))
        .build()
    )
    assert not source.is_bounded()
    (h,) = source_harness(source)
    assert drain(h) == ["one"]
    assert h.poll(100) == []  # nothing new: not the end
    write(inbox / "2.txt", "two", "three")
    time.sleep(0.002)  # the next listing is due
    h.coordinators.run_periodic_work()
    assert drain(h) == ["two", "three"]
    time.sleep(0.002)
    h.coordinators.run_periodic_work()
    assert drain(h) == []  # no file twice


def test_a_monitored_source_restored_at_another_parallelism_reads_each_file_once(tmp_path):
    inbox = tmp_path / "in"
    for i in range(12):
        write(inbox / f"{i:02d}.txt", *(f"{i}-{n}" for n in range(3)))
    source = (
        FileSource.for_record_stream_format(StreamFormat.text_line_format(), str(inbox))
        .monitor_continuously(Duration.of_millis(1))
        .build()
    )
    spec = operator(TransformationKind.SOURCE, source)
    old = OperatorHarness.subtasks(spec, 2)
    read = [line for h in old for line in h.poll(4)]  # part of their files, then a checkpoint
    states = [h.snapshot(1) for h in old]
    for h in old:
        h.close()
    for i in range(12, 15):  # files that appear while the job is down
        write(inbox / f"{i:02d}.txt", f"{i}-0")
    for h in OperatorHarness.rescaled(spec, states, 3):
        read += drain(h)
    expected = [f"{i}-{n}" for i in range(12) for n in range(3)] + ["12-0", "13-0", "14-0"]
    assert sorted(read) == sorted(expected)


@pytest.mark.parametrize("suffix", [".gz", ".bz2", ".xz"])
def test_compressed_files_are_read_decompressed_and_resume_where_they_were(tmp_path, suffix):
    import bz2
    import gzip
    import lzma

    module = {".gz": gzip, ".bz2": bz2, ".xz": lzma}[suffix]
    lines = [f"line {i}" for i in range(5000)]
    with module.open(tmp_path / f"log{suffix}", "wt") as f:
        f.writelines(f"{line}\n" for line in lines)
    source = FileSource.for_record_stream_format(
        StreamFormat.text_line_format(), str(tmp_path)
    ).build()
    (h,) = source_harness(source)
    first = h.poll(1200)
    state = h.snapshot(1)  # its position: an offset in the decompressed bytes
    h.close()
    resumed = h.restored(state)
    assert first + drain(resumed) == lines
    resumed.close()


def test_a_file_named_twice_is_read_once_and_file_systems_are_not_mixed(tmp_path):
    write(tmp_path / "in" / "a.txt", "a")
    source = FileSource.for_record_stream_format(
        StreamFormat.text_line_format(), str(tmp_path / "in"), str(tmp_path / "in" / "a.txt")
    ).build()
    assert drain(source_harness(source)[0]) == ["a"]
    with pytest.raises(ValueError, match="one file system"):
        FileSource.for_record_stream_format(
            StreamFormat.text_line_format(), str(tmp_path), "s3://bucket/in"
        ).build()
    with pytest.raises(ValueError, match=r"hdfs://nn1.*hdfs://nn2"):
        FileSource(["hdfs://nn1/in", "hdfs://nn2/in"])


def test_file_source_arguments_are_checked():
    with pytest.raises(ValueError, match="StreamFormat"):
        FileSource.for_record_stream_format("text", "/in")
    with pytest.raises(ValueError, match="one or more paths"):
        FileSource.for_record_stream_format(StreamFormat.text_line_format()).build()
    with pytest.raises(ValueError, match="unknown charset 'klingon'"):
        StreamFormat.text_line_format("klingon")
    builder = FileSource.for_record_stream_format(StreamFormat.text_line_format(), "/in")
    with pytest.raises(ValueError, match="positive interval"):
        builder.monitor_continuously(Duration.of_millis(0))
    with pytest.raises(TypeError, match="takes a Duration"):
        builder.monitor_continuously("1 s")


# --- FileSink -----------------------------------------------------------------------------------


def sink_writer(sink, subtask=0):
    return sink.create_writer(SinkWriterContext("job", "job", "sink", subtask, 1, attempt=0))


def commit(sink, committables: list[FileCommittable]) -> None:
    FileCommitter(sink.directory).commit([Committable(1, 0, c) for c in committables])


def recover(sink, restored: list[FileCommittable]) -> None:
    """As the framework recovers the only subtask of a sink: commits, then cleans up."""
    committer = FileCommitter(sink.directory)
    committables = [Committable(2, 0, c) for c in restored]
    committer.commit(committables)
    committer.abort_lingering(Recovery(0, 1, 1, tuple(committables)))


def visible(directory) -> list[str]:
    return sorted(n for n in os.listdir(directory) if not n.startswith((".", "_")))


def test_a_row_format_sink_writes_lines_in_named_part_files_at_commit(tmp_path):
    sink = (
        FileSink.for_row_format(str(tmp_path), Encoder.simple_string_encoder())
        .with_output_file_config(
            OutputFileConfig.builder().with_part_prefix("pre").with_part_suffix(".txt").build()
        )
        .build()
    )
    w = sink_writer(sink, subtask=1)
    w.write(["a", 1, ("b", 2)])
    committables = w.prepare_commit(3)
    assert visible(tmp_path) == []
    commit(sink, committables)
    (name,) = visible(tmp_path)
    assert name.startswith("pre-1-000003-") and name.endswith(".txt")
    assert (tmp_path / name).read_text() == "a\n1\n('b', 2)\n"


def test_default_names_keep_the_format_suffix():
    assert FileSink("/out").output_file_config == OutputFileConfig("part", ".jsonl")
    sink = FileSink.for_row_format("/out", Encoder.simple_string_encoder()).build()
    assert sink.output_file_config == OutputFileConfig("part", "")


def test_a_part_file_past_its_size_rolls_and_all_commit_with_the_checkpoint(tmp_path):
    policy = RollingPolicy.default_rolling_policy(part_size=10)
    sink = (
        FileSink.for_row_format(str(tmp_path), Encoder.simple_string_encoder())
        .with_rolling_policy(policy)
        .build()
    )
    w = sink_writer(sink)
    for batch in (["0123456789"], ["abc"], ["0123456789"], ["x"]):
        w.write(batch)
    pending = w.prepare_commit(1)
    assert len(pending) == 3 and visible(tmp_path) == []
    commit(sink, pending)
    contents = sorted((tmp_path / n).read_text() for n in visible(tmp_path))
    assert contents == ["0123456789\n", "abc\n0123456789\n", "x\n"]


def test_rolled_files_of_an_unfinished_checkpoint_are_never_visible_and_recovery_drops_them(
    tmp_path,
):
    sink = (
        FileSink.for_row_format(str(tmp_path), Encoder.simple_string_encoder())
        .with_rolling_policy(RollingPolicy.default_rolling_policy(part_size=1))
        .build()
    )
    w = sink_writer(sink)
    w.write(["a"])
    w.write(["b"])  # rolls the first
    w.close()  # failed before the barrier: nothing of it may become visible
    assert visible(tmp_path) == [] and len(os.listdir(tmp_path)) == 2
    recover(sink, [])
    assert os.listdir(tmp_path) == []


def test_time_limits_roll_at_the_next_write():
    policy = RollingPolicy.default_rolling_policy(
        rollover_interval=Duration.of_seconds(10), inactivity_interval=2000
    )
    assert not policy.should_roll(5, opened_s=0, last_write_s=0, now_s=1)
    assert policy.should_roll(5, opened_s=0, last_write_s=0, now_s=2.5)  # inactive
    assert policy.should_roll(5, opened_s=0, last_write_s=9, now_s=10)  # too old
    assert not RollingPolicy.on_checkpoint_rolling_policy().should_roll(10**12, 0, 0, 10**6)


class Buckets(BucketAssigner):
    """Buckets named in turn, one per write: a test's stand-in for the clock."""

    def __init__(self, *names: str) -> None:
        object.__setattr__(self, "names", list(names))

    def bucket_id(self, now_s: float) -> str:
        return self.names.pop(0)


def test_date_time_buckets_are_javas_patterns_in_a_time_zone():
    hourly = BucketAssigner.date_time_bucket_assigner(timezone_id="UTC")
    assert hourly.bucket_id(3600 * 25 + 59) == "1970-01-02--01"
    nested = BucketAssigner.date_time_bucket_assigner("'year='yyyy/'month='MM/dd", "Asia/Tokyo")
    assert nested.bucket_id(0) == "year=1970/month=01/01"  # 09:00 in Tokyo
    assert BucketAssigner.base_path_bucket_assigner().bucket_id(0) == ""
    with pytest.raises(ValueError, match="'EEE'"):
        BucketAssigner.date_time_bucket_assigner("yyyy-EEE")
    with pytest.raises(ValueError, match="unknown time zone 'Mars/Olympus'"):
        BucketAssigner.date_time_bucket_assigner(timezone_id="Mars/Olympus")


def test_each_bucket_commits_its_own_part_files(tmp_path):
    sink = (
        FileSink.for_row_format(str(tmp_path), Encoder.simple_string_encoder())
        .with_bucket_assigner(Buckets("2026-11-25--10", "2026-11-25--11", "2026-11-25--10"))
        .build()
    )
    w = sink_writer(sink)
    w.write(["a"])
    w.write(["b"])
    w.write(["c"])  # back to the first bucket's open part
    commit(sink, w.prepare_commit(1))
    committed = sorted(
        (bucket, (tmp_path / bucket / name).read_text())
        for bucket in os.listdir(tmp_path)
        for name in visible(tmp_path / bucket)
    )
    assert committed == [("2026-11-25--10", "a\nc\n"), ("2026-11-25--11", "b\n")]


def test_recovery_cleans_the_buckets_the_checkpoint_names_and_only_part_files_of_its_own(
    tmp_path,
):
    def sink(*buckets):
        return (
            FileSink.for_row_format(str(tmp_path), Encoder.simple_string_encoder())
            .with_bucket_assigner(Buckets(*buckets))
            .build()
        )

    crashed = sink_writer(sink("h11", "h11"))
    crashed.write(["kept"])
    checkpointed = crashed.prepare_commit(2)  # in checkpoint 2, not yet committed
    crashed.write(["lost"])
    crashed.close()  # failed before its next barrier
    foreign = [
        tmp_path / "h11" / ".part-00000.crc",
        tmp_path / "other" / f".part-0-{'a' * 32}.pending",
    ]
    for path in foreign:
        path.parent.mkdir(exist_ok=True)
        path.write_text("not ours")
    recover(sink(), checkpointed)
    (name,) = visible(tmp_path / "h11")
    assert (tmp_path / "h11" / name).read_text() == "kept\n"
    assert sorted(os.listdir(tmp_path / "h11")) == sorted([name, ".part-00000.crc"])
    assert all(path.exists() for path in foreign)  # another sink's, under the base path


def test_file_sink_arguments_are_checked():
    with pytest.raises(ValueError, match="hide the committed files"):
        OutputFileConfig.builder().with_part_prefix(".secret").build()
    with pytest.raises(ValueError, match="without '/'"):
        OutputFileConfig("a/b")
    with pytest.raises(ValueError, match="part_size must be bytes"):
        RollingPolicy.default_rolling_policy(part_size=0)
    with pytest.raises(ValueError, match="simple_string_encoder"):
        FileSink.for_row_format("/out", "utf-8")
    with pytest.raises(ValueError, match="RollingPolicy"):
        FileSink("/out", rolling_policy="often")
    with pytest.raises(RecordEncodingError, match="record 'é' cannot be written in ascii"):
        part = Encoder.simple_string_encoder("ascii")
        import io

        part.open_part(io.BytesIO()).add(["e", "é"])


def test_relative_paths_are_the_drivers_and_a_missing_one_is_refused_before_the_job(
    tmp_path, monkeypatch
):
    from barrierflow.errors import ConfigurationError

    monkeypatch.chdir(tmp_path)
    write(tmp_path / "in" / "x.txt", "x")
    source = FileSource.for_record_stream_format(StreamFormat.text_line_format(), "in").build()
    assert source.paths == [str(tmp_path / "in")]
    source.check()
    with pytest.raises(ConfigurationError, match=r"FileSource: .*/missing does not exist"):
        FileSource("missing").check()
