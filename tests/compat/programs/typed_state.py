"""State of declared types: a FLOAT value, a list of TUPLEs, a map of DOUBLEs. What a function
stores is checked against the type and read back as it was stored (PyFlink's state cache hands
back the stored object: 0.1 in a FLOAT state reads 0.1, an int in a DOUBLE map stays an int).
"""

from barrierflow.common import Types
from barrierflow.datastream import StreamExecutionEnvironment
from barrierflow.datastream.functions import KeyedProcessFunction, RuntimeContext
from barrierflow.datastream.state import (
    ListStateDescriptor,
    MapStateDescriptor,
    ValueStateDescriptor,
)


class Track(KeyedProcessFunction):
    def open(self, runtime_context: RuntimeContext):
        self.total = runtime_context.get_state(ValueStateDescriptor("total", Types.FLOAT()))
        self.seen = runtime_context.get_list_state(
            ListStateDescriptor("seen", Types.TUPLE([Types.STRING(), Types.INT()]))
        )
        self.whole = runtime_context.get_map_state(
            MapStateDescriptor("whole", Types.STRING(), Types.DOUBLE())
        )

    def process_element(self, value, ctx):
        total = (self.total.value() or 0.0) + value[1]
        self.total.update(total)
        self.seen.add((value[0], int(value[1])))
        self.whole.put(value[0], int(value[1]))
        yield value[0], self.total.value(), list(self.seen.get()), list(self.whole.items())


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
readings = env.from_collection(
    [("a", 0.1), ("a", 0.2), ("b", 1.5), ("a", 0.3), ("b", 2.25)],
    type_info=Types.TUPLE([Types.STRING(), Types.DOUBLE()]),
)
readings.key_by(lambda r: r[0]).process(Track()).print()
env.execute("typed_state")
