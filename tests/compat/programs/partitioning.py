"""Partitioning: shuffle, rescale, rebalance, forward, broadcast and partition_custom; chaining
controls are honoured."""

from barrierflow.common import Types
from barrierflow.datastream import StreamExecutionEnvironment
from barrierflow.datastream.functions import MapFunction, Partitioner, RuntimeContext


class Where(MapFunction):
    def open(self, runtime_context: RuntimeContext):
        self.subtask = runtime_context.get_index_of_this_subtask()

    def map(self, value):
        return f"{value} at {self.subtask}"


class ByParity(Partitioner):
    def partition(self, key, num_partitions):
        return key % num_partitions


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(2)
numbers = env.from_collection(list(range(6)), type_info=Types.INT())

# where a record goes is up to the partitioner, not checked; what arrives is
numbers.shuffle().map(lambda v: v * 10, output_type=Types.INT()).rescale().map(
    lambda v: v + 1, output_type=Types.INT()
).rebalance().map(lambda v: v, output_type=Types.INT()).forward().filter(
    lambda v: v > 0
).start_new_chain().print("moved").set_parallelism(1)

numbers.broadcast().map(Where(), output_type=Types.STRING()).disable_chaining().print(
    "everywhere"
).set_parallelism(1)

numbers.partition_custom(ByParity(), lambda v: v).map(Where(), output_type=Types.STRING()).print(
    "custom"
).set_parallelism(1)
env.execute("partitioning")
