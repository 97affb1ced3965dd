"""BATCH execution: a keyed reduction and a window emit only their final results.

Not run on PyFlink: PyFlink 2.3 did not finish this job in BATCH mode here (it printed the
reduction and some windows, then hung); the expected output is Flink's batch semantics.
"""
# pyflink: skip

from barrierflow.common import Duration, Time, Types, WatermarkStrategy
from barrierflow.common.watermark_strategy import TimestampAssigner
from barrierflow.datastream import RuntimeExecutionMode, StreamExecutionEnvironment
from barrierflow.datastream.window import TumblingEventTimeWindows


class Seconds(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[2] * 1000


env = StreamExecutionEnvironment.get_execution_environment()
env.set_runtime_mode(RuntimeExecutionMode.BATCH)
env.set_parallelism(2)

sales = env.from_collection(
    [("pen", 1, 1), ("ink", 5, 2), ("pen", 2, 3), ("pen", 4, 12), ("ink", 1, 14), ("cap", 9, 30)],
    type_info=Types.TUPLE([Types.STRING(), Types.INT(), Types.INT()]),
)
sales.key_by(lambda s: s[0]).sum(1).print("total").set_parallelism(1)
sales.assign_timestamps_and_watermarks(
    WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(1)).with_timestamp_assigner(
        Seconds()
    )
).key_by(lambda s: s[0]).window(TumblingEventTimeWindows.of(Time.seconds(10))).reduce(
    lambda a, b: (a[0], a[1] + b[1], max(a[2], b[2]))
).print("per10s").set_parallelism(1)
env.execute("batch_mode")
