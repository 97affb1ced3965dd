"""A ProcessFunction routing records to side outputs, read back with get_side_output."""

from barrierflow.common import Types
from barrierflow.datastream import OutputTag, ProcessFunction, StreamExecutionEnvironment

small = OutputTag("small", Types.INT())
odd = OutputTag("odd", Types.STRING())


class Split(ProcessFunction):
    def process_element(self, value, ctx):
        if value < 10:
            yield small, value
        if value % 2:
            yield odd, "odd " + str(value)
        yield value * 10


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
main = env.from_collection([1, 4, 15, 22, 7], type_info=Types.INT()).process(
    Split(), output_type=Types.LONG()
)
main.print("main")
main.get_side_output(small).print("small")
main.get_side_output(odd).print("odd")
env.execute("side_outputs")
