"""Broadcast state: thresholds broadcast to every subtask, events keyed by kind and judged
against their kind's threshold once it is known, unknown kinds to a side output.

Events wait in keyed state until the end of input (an event-time timer: the broadcast input
has no watermarks, so the time advances only when both inputs end), so what is printed does
not depend on how the two inputs interleave.
"""

from barrierflow.common import Types, WatermarkStrategy
from barrierflow.common.watermark_strategy import TimestampAssigner
from barrierflow.datastream import OutputTag, StreamExecutionEnvironment
from barrierflow.datastream.functions import KeyedBroadcastProcessFunction, RuntimeContext
from barrierflow.datastream.state import ListStateDescriptor, MapStateDescriptor

THRESHOLDS = MapStateDescriptor("thresholds", Types.STRING(), Types.INT())
UNKNOWN = OutputTag("unknown", Types.STRING())


class Judge(KeyedBroadcastProcessFunction):
    def open(self, runtime_context: RuntimeContext):
        self.waiting = runtime_context.get_list_state(ListStateDescriptor("waiting", Types.INT()))

    def process_element(self, event, ctx):
        self.waiting.add(event[1])
        ctx.timer_service().register_event_time_timer(ctx.timestamp())

    def process_broadcast_element(self, rule, ctx):
        ctx.get_broadcast_state(THRESHOLDS).put(rule[0], rule[1])

    def on_timer(self, timestamp, ctx):
        threshold = ctx.get_broadcast_state(THRESHOLDS).get(ctx.get_current_key())
        for amount in self.waiting.get():
            if threshold is None:
                yield UNKNOWN, f"{ctx.get_current_key()} {amount}"
            else:
                verdict = "over" if amount > threshold else "ok"
                yield f"{ctx.get_current_key()} {amount} {verdict}"
        self.waiting.clear()


class EventTime(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[2]


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(2)

rules = env.from_collection([("small", 10), ("big", 100)])
events = env.from_collection(
    [("small", 5, 1), ("big", 500, 2), ("small", 50, 3), ("odd", 1, 4), ("big", 7, 5)]
).assign_timestamps_and_watermarks(
    WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(EventTime())
)
judged = (
    events.key_by(lambda e: e[0])
    .connect(rules.broadcast(THRESHOLDS))
    .process(Judge(), output_type=Types.STRING())
)
judged.print("judged").set_parallelism(1)
judged.get_side_output(UNKNOWN).print("unknown").set_parallelism(1)
env.execute("broadcast_rules")
