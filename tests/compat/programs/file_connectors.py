"""Files in and out as PyFlink writes it: FileSource over a text line format, FileSink of a row
format with named part files. The program prints what the committed files hold."""

import glob
import os

from barrierflow.common import Types, WatermarkStrategy
from barrierflow.common.serialization import Encoder
from barrierflow.datastream import StreamExecutionEnvironment
from barrierflow.datastream.connectors.file_system import (
    FileSink,
    FileSource,
    OutputFileConfig,
    RollingPolicy,
    StreamFormat,
)

os.makedirs("in", exist_ok=True)
with open("in/a.txt", "w") as f:
    f.write("apple pie\nbanana split\n")
with open("in/b.txt", "w") as f:
    f.write("cherry tart\n")

env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(2)
env.enable_checkpointing(200)

lines = env.from_source(
    FileSource.for_record_stream_format(StreamFormat.text_line_format(), "in").build(),
    WatermarkStrategy.no_watermarks(),
    "lines",
)
lines.map(lambda line: line.upper(), output_type=Types.STRING()).sink_to(
    FileSink.for_row_format(os.path.abspath("out"), Encoder.simple_string_encoder())
    .with_output_file_config(
        OutputFileConfig.builder().with_part_prefix("pre").with_part_suffix(".txt").build()
    )
    .with_rolling_policy(RollingPolicy.default_rolling_policy(part_size=1024 * 1024))
    .build()
)
env.execute("file_connectors")

committed = [
    p
    for p in glob.glob("out/**/*", recursive=True)
    if os.path.isfile(p) and not os.path.basename(p).startswith((".", "_"))
]
names_ok = all(os.path.basename(p).startswith("pre-") and p.endswith(".txt") for p in committed)
print("part files named pre-*.txt:", bool(committed) and names_ok)
lines = []
for path in committed:
    with open(path) as f:
        lines += f.read().splitlines()
for line in sorted(lines):
    print(line)
