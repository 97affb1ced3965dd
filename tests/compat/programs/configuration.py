"""Configuration as PyFlink passes it: get_execution_environment(config), get_config() with
global job parameters, and what a RuntimeContext tells a function, metrics included."""

from barrierflow.common import Configuration, Types
from barrierflow.datastream import StreamExecutionEnvironment
from barrierflow.datastream.functions import MapFunction, RuntimeContext

config = Configuration()
config.set_string("parallelism.default", "2")
config.set_integer("pipeline.max-parallelism", 64)
env = StreamExecutionEnvironment.get_execution_environment(config)
env.get_config().set_global_job_parameters({"greeting": "hello", "times": "2"})
env.get_config().set_auto_watermark_interval(500)


class Greet(MapFunction):
    def open(self, runtime_context: RuntimeContext):
        self.greeting = runtime_context.get_job_parameter("greeting", "hi")
        self.times = int(runtime_context.get_job_parameter("times", "1"))
        self.missing = runtime_context.get_job_parameter("missing", "default")
        self.about = (
            runtime_context.get_number_of_parallel_subtasks(),
            runtime_context.get_max_number_of_parallel_subtasks(),
            runtime_context.get_attempt_number(),
        )
        self.seen = runtime_context.get_metrics_group().counter("seen")

    def map(self, value):
        self.seen.inc()
        return f"{self.greeting * self.times} {value} {self.missing} {self.about}"


print("parallelism", env.get_parallelism(), env.get_config().get_auto_watermark_interval())
env.from_collection(["a", "b"], type_info=Types.STRING()).map(
    Greet(), output_type=Types.STRING()
).print().set_parallelism(1)
env.execute("configuration")
