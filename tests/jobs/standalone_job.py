"""The odd/even running sums as a script for ``spark-submit``: it creates no SparkSession,
so the one barrierflow builds must be spark-submit's. Arguments: N, output directory,
checkpoint directory, result file (the JobExecutionResult's attempts, as JSON)."""

import json

from barrierflow.common import RestartStrategies
from barrierflow.datastream import StreamExecutionEnvironment
from tests.jobs import odd_even
from tests.jobs.arguments import job_arguments

count, out_dir, checkpoint_dir, result_file = job_arguments(
    "N OUT_DIR CHECKPOINT_DIR RESULT_FILE", 4
)
n = int(count)
env = StreamExecutionEnvironment().set_parallelism(2)
odd_even.build(env, n, out_dir, checkpoint_dir, interval_ms=200, delay_s=0.001)
env.set_restart_strategy(RestartStrategies.fixed_delay_restart(5, 2000))
result = env.execute("standalone-odd-even")
with open(result_file, "w") as f:
    json.dump({"attempts": result.attempts, "job_id": result.job_id}, f)
