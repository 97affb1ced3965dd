"""Rows by position and by name, 32-bit floats, and what print() writes for typed and untyped
streams."""

from barrierflow.common import Row, Types
from barrierflow.datastream import StreamExecutionEnvironment

env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)

readings = env.from_collection(
    [("s1", 1.1, True), ("s2", 20000000.0, False), ("s1", 0.0001, True)],
    type_info=Types.ROW_NAMED(
        ["sensor", "value", "ok"], [Types.STRING(), Types.FLOAT(), Types.BOOLEAN()]
    ),
)
readings.print("typed")
readings.map(lambda r: (r.sensor, r.value * 2, r["ok"])).print("untyped")
readings.map(
    lambda r: Row(r[0], r.value + 1),
    output_type=Types.ROW([Types.STRING(), Types.DOUBLE()]),
).print("double")
readings.map(lambda r: r.as_dict()["sensor"] + "!", output_type=Types.STRING()).print("string")
readings.map(lambda r: [r.value, r.value], output_type=Types.LIST(Types.FLOAT())).print("list")
env.execute("rows_and_types")
