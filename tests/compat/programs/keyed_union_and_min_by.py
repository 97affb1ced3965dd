"""A union of keyed streams gives their records (no longer keyed), and BATCH mode's min_by and
max_by keep the whole record with the extreme, also by a key that is a list (PyFlink keys by
the key's bytes, so a list is a key there).
"""

from barrierflow.common import Types
from barrierflow.datastream import RuntimeExecutionMode, StreamExecutionEnvironment

env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(2)
small = env.from_collection([1, 2, 3], type_info=Types.INT())
large = env.from_collection([4, 5, 6], type_info=Types.INT())
union = small.key_by(lambda x: x % 2).union(large.key_by(lambda x: x % 2))
union.map(lambda x: x * 10, output_type=Types.INT()).print("keyed union").set_parallelism(1)
small.key_by(lambda x: x).union(large).print("keyed and not").set_parallelism(1)
env.execute("keyed union")

env = StreamExecutionEnvironment.get_execution_environment()
env.set_runtime_mode(RuntimeExecutionMode.BATCH)
env.set_parallelism(2)
ds = env.from_collection(
    [(1, "9", 0), (1, "5", 1), (1, "6", 2), (5, "5", 0), (5, "3", 1)],
    type_info=Types.ROW_NAMED(["v1", "v2", "v3"], [Types.INT(), Types.STRING(), Types.INT()]),
)
ds.key_by(lambda x: x[0]).min_by("v2").print("min_by").set_parallelism(1)
ds.key_by(lambda x: x[0]).max_by(1).print("max_by").set_parallelism(1)
ds.key_by(lambda x: [x[0]]).min_by(2).print("min_by, list key").set_parallelism(1)
ds.key_by(lambda x: [1]).max_by("v2").print("max_by, one list key").set_parallelism(1)
env.execute("batch min_by and max_by")
