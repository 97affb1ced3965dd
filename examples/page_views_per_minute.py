"""Page views per minute, and the users who went quiet, written as a PyFlink DataStream program:
only the imports say barrierflow.

Event timestamps come from the records (a ``TimestampAssigner``), watermarks allow 10 s of
disorder; a tumbling one-minute event-time window counts each page's views; a
``KeyedProcessFunction`` keeps one event-time timer per user, a minute after their last view.
The end of the (bounded) input fires every open window and timer.

Run: ``barrierflow run examples/page_views_per_minute.py`` (or ``python`` the file).
"""

from barrierflow.common import Duration, Time, WatermarkStrategy
from barrierflow.common.watermark_strategy import TimestampAssigner
from barrierflow.datastream import (
    KeyedProcessFunction,
    ProcessWindowFunction,
    StreamExecutionEnvironment,
)
from barrierflow.datastream.state import ValueStateDescriptor
from barrierflow.datastream.window import TumblingEventTimeWindows

# (user, page, epoch milliseconds); bob's view of /cart arrives late, within the 10 s allowed
VIEWS = [
    ("alice", "/home", 1_000),
    ("bob", "/home", 2_000),
    ("alice", "/cart", 61_000),
    ("carol", "/home", 65_000),
    ("bob", "/cart", 59_000),
    ("alice", "/pay", 125_000),
    ("carol", "/cart", 130_000),
]


class ViewTime(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[2]


class CountViews(ProcessWindowFunction):
    def process(self, key, context, elements):
        window = context.window()
        yield f"{key} {window.start // 1000}-{window.end // 1000} s: {len(list(elements))} views"


class QuietUsers(KeyedProcessFunction):
    def open(self, runtime_context):
        self.timer = runtime_context.get_state(ValueStateDescriptor("timer"))

    def process_element(self, value, ctx):
        if self.timer.value() is not None:
            ctx.timer_service().delete_event_time_timer(self.timer.value())
        self.timer.update(ctx.timestamp() + 60_000)
        ctx.timer_service().register_event_time_timer(ctx.timestamp() + 60_000)

    def on_timer(self, timestamp, ctx):
        yield f"{ctx.get_current_key()} quiet since {(timestamp - 60_000) // 1000} s"


def main() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    views = env.from_collection(VIEWS).assign_timestamps_and_watermarks(
        WatermarkStrategy.for_bounded_out_of_orderness(
            Duration.of_seconds(10)
        ).with_timestamp_assigner(ViewTime())
    )
    (
        views.key_by(lambda view: view[1])
        .window(TumblingEventTimeWindows.of(Time.minutes(1)))
        .process(CountViews())
        .print()
    )
    views.key_by(lambda view: view[0]).process(QuietUsers()).print()
    env.execute("page views per minute")


if __name__ == "__main__":
    main()
