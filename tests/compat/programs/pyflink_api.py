"""What a PyFlink program may write that barrierflow's own programs did not: keyed state in a
KeyedStream's map and filter, a MapState used as a dict, a rolling sum by field name on named
rows, project(), get_name(), collecting with a limit, values that wrap into a SHORT, a job run
in the background and waited for through its client's futures (its result, the job statuses),
a number sequence read in parallel, and a continuous trigger.
"""

from barrierflow.common import JobStatus, Time, Types, WatermarkStrategy
from barrierflow.common.watermark_strategy import TimestampAssigner
from barrierflow.datastream import StreamExecutionEnvironment
from barrierflow.datastream.connectors.number_seq import NumberSequenceSource
from barrierflow.datastream.functions import (
    FilterFunction,
    KeyedProcessFunction,
    MapFunction,
    ProcessWindowFunction,
    RuntimeContext,
)
from barrierflow.datastream.state import MapStateDescriptor, ValueStateDescriptor
from barrierflow.datastream.window import (
    ContinuousEventTimeTrigger,
    TimeWindow,
    TumblingEventTimeWindows,
)


class CountPerKey(MapFunction):
    def open(self, runtime_context: RuntimeContext):
        self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.INT()))

    def map(self, value):
        count = (self.count.value() or 0) + 1
        self.count.update(count)
        return value[0], count


class FirstOfKey(FilterFunction):
    def open(self, runtime_context: RuntimeContext):
        self.seen = runtime_context.get_state(ValueStateDescriptor("seen", Types.BOOLEAN()))

    def filter(self, value):
        first = not self.seen.value()
        self.seen.update(True)
        return first


class WordsAsDict(KeyedProcessFunction):
    def open(self, runtime_context: RuntimeContext):
        self.words = runtime_context.get_map_state(
            MapStateDescriptor("words", Types.STRING(), Types.INT())
        )

    def process_element(self, value, ctx):
        word = value[1]
        self.words[word] = (self.words[word] or 0) + 1
        if word == "drop" and "drop" in self.words:
            del self.words["drop"]
        yield ctx.get_current_key(), sorted((w, self.words[w]) for w in self.words)


class ByFirstField(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp) -> int:
        return value[1]


class Count(ProcessWindowFunction[tuple, tuple, str, TimeWindow]):
    def process(self, key, context: ProcessWindowFunction.Context[TimeWindow], elements):
        yield key, context.window().start, len(list(elements))


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
words = env.from_collection(
    [("a", "x"), ("b", "y"), ("a", "x"), ("a", "drop"), ("b", "z"), ("a", "w")],
    type_info=Types.TUPLE([Types.STRING(), Types.STRING()]),
)
by_key = words.key_by(lambda r: r[0])
by_key.map(CountPerKey(), output_type=Types.TUPLE([Types.STRING(), Types.INT()])).print()
by_key.filter(FirstOfKey()).map(lambda r: ("first", r[0], r[1])).print()
by_key.process(WordsAsDict()).print()
env.execute("keyed state")

rows = env.from_collection(
    [("a", 1, 0.5), ("b", 2, 1.0), ("a", 3, 2.0)],
    type_info=Types.ROW_NAMED(["word", "count", "weight"],
                              [Types.STRING(), Types.INT(), Types.DOUBLE()]),
)  # fmt: skip
rows.key_by(lambda r: r.word).sum("count").map(lambda r: (r.word, r["count"])).print()
triple = Types.TUPLE([Types.STRING(), Types.INT(), Types.DOUBLE()])
pairs = rows.map(lambda r: (r[0], r[1], r[2]), output_type=triple)
projected = pairs.project(2, 0)
projected.name("projected").print()
print("name:", projected.get_name())
env.execute("rows")

print("collected:", env.from_collection(list(range(20)), Types.INT()).execute_and_collect(limit=7))
with env.from_collection([40000, -40000, 7], Types.SHORT()).execute_and_collect() as shorts:
    print("shorts:", sorted(shorts))

env.from_collection([1, 2, 3]).map(lambda x: ("async", x * 10)).print()
client = env.execute_async("in the background")
result = client.get_job_execution_result().result()
print("background job ended")
print("accumulators:", result.get_all_accumulator_results(), result.get_accumulator_result("n"))
print("terminal:", [s.name for s in JobStatus if s.is_terminal_state()])
print("globally terminal:", [s.name for s in JobStatus if s.is_globally_terminal_state()])

numbers = env.from_source(NumberSequenceSource(-3, 8), WatermarkStrategy.no_watermarks(), "seq")
with numbers.set_parallelism(3).execute_and_collect() as sequence:
    print("sequence:", sorted(sequence))

events = env.from_collection(
    [("k", 1), ("k", 4), ("k", 12), ("k", 25), ("j", 3)],
    type_info=Types.TUPLE([Types.STRING(), Types.INT()]),
).assign_timestamps_and_watermarks(
    WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(ByFirstField())
)
# Windows of 20 ms fire at 10 ms and at their end: a bounded input ends with one jump of the
# watermark, in which PyFlink fires no timer a firing registers (Flink's Java operators do).
events.key_by(lambda e: e[0]).window(TumblingEventTimeWindows.of(Time.milliseconds(20))).trigger(
    ContinuousEventTimeTrigger.of(Time.milliseconds(10))
).process(Count(), Types.TUPLE([Types.STRING(), Types.INT(), Types.INT()])).print()
env.execute("continuous")
