"""Word count over text files: FileSource -> flat_map -> key_by -> running count -> FileSink.

Run: ``barrierflow run examples/word_count.py`` (reads this repository's README.md unless
WORD_COUNT_INPUT names a file or directory). Committed output: /tmp/barrierflow-word-count/out.
"""

import os
import re
from pathlib import Path

from barrierflow.datastream import KeyedProcessFunction, StreamExecutionEnvironment
from barrierflow.datastream.connectors.file_system import FileSink, FileSource
from barrierflow.datastream.state import ValueStateDescriptor

WORD = re.compile(r"[a-z0-9']+")


class CountWords(KeyedProcessFunction):
    def open(self, runtime_context):
        self.count = runtime_context.get_state(ValueStateDescriptor("count"))

    def process_element(self, word, ctx):
        count = (self.count.value() or 0) + 1
        self.count.update(count)
        yield [word, count]


def main() -> None:
    default_input = Path(__file__).resolve().parent.parent / "README.md"
    source_path = os.environ.get("WORD_COUNT_INPUT", str(default_input))
    env = StreamExecutionEnvironment()
    env.set_parallelism(2)
    env.enable_checkpointing(500)
    env.get_checkpoint_config().set_checkpoint_storage("/tmp/barrierflow-word-count/ckpt")
    (
        env.from_source(FileSource(source_path), "lines")
        .flat_map(lambda line: WORD.findall(line.lower()))
        .uid("split")
        .key_by(lambda word: word)
        .process(CountWords())
        .uid("count")
        .sink_to(FileSink("/tmp/barrierflow-word-count/out"))
        .uid("sink")
    )
    result = env.execute("word-count")
    print(f"job {result.job_id} finished after {result.num_completed_checkpoints} checkpoints")


if __name__ == "__main__":
    main()
