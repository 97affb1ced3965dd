"""The seed documents' example: increasing numbers, a running sum of the odd and of the even.

Run: ``barrierflow run examples/odd_even_sum.py`` (or ``python examples/odd_even_sum.py``).
Committed output: /tmp/barrierflow-odd-even/out/part-*.jsonl, one ``[key, value, sum]`` per line.
Each run starts from an empty /tmp/barrierflow-odd-even (a sink adds files to its directory: a
second run into the same one would double the output).
"""

import shutil

from barrierflow.datastream import KeyedProcessFunction, StreamExecutionEnvironment
from barrierflow.datastream.connectors.file_system import FileSink
from barrierflow.datastream.connectors.number_seq import NumberSequenceSource
from barrierflow.datastream.state import ValueStateDescriptor


class RunningSum(KeyedProcessFunction):
    def open(self, runtime_context):
        self.total = runtime_context.get_state(ValueStateDescriptor("total"))

    def process_element(self, value, ctx):
        t = (self.total.value() or 0) + value
        self.total.update(t)
        yield [ctx.get_current_key(), value, t]


def main() -> None:
    shutil.rmtree("/tmp/barrierflow-odd-even", ignore_errors=True)  # the earlier run's output
    env = StreamExecutionEnvironment()
    env.set_parallelism(2)
    env.enable_checkpointing(200)  # milliseconds
    env.get_checkpoint_config().set_checkpoint_storage("file:///tmp/barrierflow-odd-even/ckpt")
    (
        env.from_source(NumberSequenceSource(1, 20000), "numbers")
        .key_by(lambda x: x % 2)
        .process(RunningSum())
        .uid("running-sum")
        .sink_to(FileSink("/tmp/barrierflow-odd-even/out"))
        .uid("sink")
    )
    result = env.execute("odd-even")
    print(f"job {result.job_id} finished; last checkpoint: {result.final_checkpoint}")


if __name__ == "__main__":
    main()
