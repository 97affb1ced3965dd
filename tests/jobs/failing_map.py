"""A job whose map function raises on record 5000, for ``barrierflow run``: what a user sees on
the console when a job fails for good. Argument: a directory for its checkpoints and output."""

from barrierflow.datastream import StreamExecutionEnvironment
from barrierflow.datastream.connectors.file_system import FileSink
from barrierflow.datastream.connectors.number_seq import NumberSequenceSource
from tests.jobs.arguments import job_arguments

(directory,) = job_arguments("DIRECTORY", 1)


def refuse_5000(value: int) -> int:
    if value == 5000:
        raise ValueError(f"bad record {value}")
    return value


env = StreamExecutionEnvironment().set_parallelism(2)
env.enable_checkpointing(200)
env.get_checkpoint_config().set_checkpoint_storage(f"{directory}/checkpoints")
numbers = env.from_source(NumberSequenceSource(1, 20_000), "numbers")
numbers.map(refuse_5000).sink_to(FileSink(f"{directory}/out"))
env.execute("failing-map")
