"""Event time over a monitored file source, as a whole job on Spark: each file is a split with
its own watermark, and a file read to its end stops holding the subtask's watermark back. The
job never ends by itself (new files may come), so its windows must fire while it runs."""

from __future__ import annotations

import time

import pytest

from barrierflow.common import Duration, Time, WatermarkStrategy
from barrierflow.datastream import StreamExecutionEnvironment
from barrierflow.datastream.connectors.file_system import FileSink, FileSource, StreamFormat
from barrierflow.datastream.window import TumblingEventTimeWindows
from tests.jobs.odd_even import read_committed

pytestmark = pytest.mark.spark


def test_a_file_read_to_its_end_does_not_hold_the_windows_of_later_files_back(spark, tmp_path):
    inbox = tmp_path / "in"
    inbox.mkdir()
    # timestamps in ms: the first file's window [0, 1000) closes only by the second's records
    (inbox / "a.txt").write_text("".join(f"{t}\n" for t in range(0, 1000, 100)))
    (inbox / "b.txt").write_text("".join(f"{t}\n" for t in range(5000, 6000, 100)))
    out = tmp_path / "out"

    env = StreamExecutionEnvironment().set_parallelism(1)
    env.enable_checkpointing(200)
    env.get_checkpoint_config().set_checkpoint_storage(str(tmp_path / "checkpoints"))
    env.configure({"pipeline.auto-watermark-interval": 20})
    source = (
        FileSource.for_record_stream_format(StreamFormat.text_line_format(), str(inbox))
        .monitor_continuously(Duration.of_millis(100))
        .build()
    )
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(
        lambda line, _: int(line)
    )
    (
        env.from_source(source, strategy, "files")
        .map(lambda line: [int(line) // 1000 * 1000, 1])
        .key_by(lambda pair: pair[0])
        .window(TumblingEventTimeWindows.of(Time.seconds(1)))
        .reduce(lambda a, b: [a[0], a[1] + b[1]])
        .sink_to(FileSink(str(out)))
    )
    client = env.execute_async("file-windows")
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not client.done():
            if read_committed(str(out)):
                break
            time.sleep(0.2)
        time.sleep(1)  # a few more checkpoints: nothing else may come out
        records = read_committed(str(out))
    finally:
        client.cancel()
        for _ in range(600):
            if client.done():
                break
            time.sleep(0.1)
    # the second file's window [5000, 6000) waits for a later file: it must not fire
    assert records == [[0, 10]], f"committed while the job ran: {records}"
