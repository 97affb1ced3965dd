"""The odd/even job, or a variant of it chosen by BARRIERFLOW_TEST_VARIANT, for the dry runs of
restores from its savepoints: ``same``, ``renamed`` (the running sum has a new uid, so its
state would be left behind) or ``max-parallelism`` (64 key groups instead of odd_even's 16)."""

import os
import tempfile

from barrierflow.datastream import StreamExecutionEnvironment
from tests.jobs.odd_even import build

variant = os.environ.get("BARRIERFLOW_TEST_VARIANT", "same")
env = StreamExecutionEnvironment().set_parallelism(3)
build(env, 1000, tempfile.mkdtemp(), None)
if variant == "max-parallelism":
    env.set_max_parallelism(64)
if variant == "renamed":
    for t in env._transformations:
        if t.uid == "running-sum":
            t.uid = "running-sum-v2"
env.execute("variants")
