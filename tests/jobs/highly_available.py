"""The odd/even job as a script for ``barrierflow run`` under driver high availability (given
with ``-D high-availability.*``): the tests kill, pause and restart its driver. Paths and size
come from the environment."""

import os

from barrierflow.datastream import StreamExecutionEnvironment
from tests.jobs import odd_even

env = StreamExecutionEnvironment().set_parallelism(2)
odd_even.build(
    env,
    int(os.environ["ODD_EVEN_N"]),
    os.environ["ODD_EVEN_OUT"],
    os.environ["ODD_EVEN_CKPT"],
    interval_ms=300,
    delay_s=float(os.environ.get("ODD_EVEN_DELAY_S", "0.001")),
)
env.execute("highly-available")
