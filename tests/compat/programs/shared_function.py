"""One function object passed to two operators: each operator runs a copy of its own, as each
of PyFlink's operators unpickles its own. The running sums keep their state handle in ``self``
(set in ``open``); shared, the second operator's ``open`` would point both at its state. The
same holds for a function the API wraps: a ``MapFunction`` on a keyed stream.
"""

from barrierflow.common import Types
from barrierflow.datastream import StreamExecutionEnvironment
from barrierflow.datastream.functions import KeyedProcessFunction, MapFunction, RuntimeContext
from barrierflow.datastream.state import ValueStateDescriptor


class RunningSum(KeyedProcessFunction):
    def __init__(self, label: str):
        self.label = label

    def open(self, runtime_context: RuntimeContext):
        self.total = runtime_context.get_state(ValueStateDescriptor("total", Types.LONG()))

    def process_element(self, value, ctx):
        total = (self.total.value() or 0) + value
        self.total.update(total)
        yield f"{self.label} key={ctx.get_current_key()} value={value} sum={total}"


class RunningSumMap(MapFunction):
    def open(self, runtime_context: RuntimeContext):
        self.total = runtime_context.get_state(ValueStateDescriptor("total", Types.LONG()))

    def map(self, value):
        total = (self.total.value() or 0) + value
        self.total.update(total)
        return f"map value={value} sum={total}"


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
numbers = env.from_collection(list(range(1, 13)), type_info=Types.LONG())
running_sum = RunningSum("sum")
by_parity = numbers.key_by(lambda x: x % 2).process(running_sum, Types.STRING())
by_three = numbers.key_by(lambda x: x % 3).process(running_sum, Types.STRING())
by_parity.map(lambda s: "parity " + s, Types.STRING()).print()
by_three.map(lambda s: "three " + s, Types.STRING()).print()
summing_map = RunningSumMap()
numbers.key_by(lambda x: x % 2).map(summing_map, Types.STRING()).map(
    lambda s: "parity " + s, Types.STRING()
).print()
numbers.key_by(lambda x: x % 3).map(summing_map, Types.STRING()).map(
    lambda s: "three " + s, Types.STRING()
).print()
env.execute("shared_function")
