"""Word count as PyFlink's tutorials write it: typed tuples, a keyed reduce, print()."""

from barrierflow.common import Types
from barrierflow.datastream import StreamExecutionEnvironment

env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)

lines = env.from_collection(
    ["to be or not to be", "that is the question", "to be"], type_info=Types.STRING()
)
counts = (
    lines.flat_map(
        lambda line: [(word, 1) for word in line.split()],
        output_type=Types.TUPLE([Types.STRING(), Types.INT()]),
    )
    .key_by(lambda pair: pair[0])
    .reduce(lambda a, b: (a[0], a[1] + b[1]))
)
counts.print()
env.execute("word_count")
