"""The odd/even job on RocksDB with incremental checkpoints, as a script for ``barrierflow run``
(the resume test kills its driver); paths and size come from the environment."""

import os

from barrierflow.datastream import StreamExecutionEnvironment
from tests.jobs import odd_even

env = StreamExecutionEnvironment().set_parallelism(2)
odd_even.build(
    env,
    int(os.environ["ODD_EVEN_N"]),
    os.environ["ODD_EVEN_OUT"],
    os.environ["ODD_EVEN_CKPT"],
    interval_ms=100,
    delay_s=0.0005,
    state_backend="rocksdb",
    conf={
        "execution.checkpointing.incremental": True,
        "taskmanager.state.local.root-dirs": os.environ["ODD_EVEN_LOCAL"],
    },
)
env.execute("resumable")
