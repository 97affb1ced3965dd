"""Start-up: from ``barrierflow run`` to the first record processed, against creating the
SparkSession alone (issue 26: at most 1 s more), measured in the same run.

Both sides are whole new processes, timed from just before each is launched:

- **session alone**: ``python -c`` that creates ``SparkSession.builder.master("local[N]")``
  and prints the time once ``getOrCreate()`` returned: what any PySpark program pays;
- **context alone**: the same with a ``SparkContext`` alone, which is all a job needs (its
  barrier stage is an RDD job): the floor under barrierflow's figure;
- **barrierflow**: ``barrierflow run`` (the embedded default, ``local[N]``) of a small job
  (a sequence of numbers through a keyed count at parallelism 2) whose first ``map`` call, in
  a Spark executor's Python worker, writes the time to a file; the first of the two
  subtasks' times is the first record processed.

The three alternate for ``--rounds`` rounds; medians and the difference are printed, then one
JSON line with every figure. Only one benchmark may run on the machine at a time.

    python bench/startup.py --rounds 5
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

SLOTS = max(2, os.cpu_count() or 1)  # the embedded session's local[N] for a job at parallelism 2

SESSION_ALONE = """
import time
from pyspark.sql import SparkSession
SparkSession.builder.master("local[%d]").appName("startup").getOrCreate()
print(time.time(), flush=True)
"""

CONTEXT_ALONE = """
import time
from pyspark import SparkContext
SparkContext(master="local[%d]", appName="startup")
print(time.time(), flush=True)
"""

JOB = '''
"""A keyed count whose first map call, in each subtask, records when it ran."""
import os
import sys
import threading
import time

from barrierflow.datastream import StreamExecutionEnvironment
from barrierflow.datastream.connectors.discarding import DiscardingSink
from barrierflow.datastream.connectors.number_seq import NumberSequenceSource

MARKS = sys.argv[1]


def first(value):
    global _seen
    if not _seen:
        _seen = True
        with open(os.path.join(MARKS, f"{os.getpid()}-{threading.get_ident()}"), "w") as f:
            f.write(repr(time.time()))
    return value % 100


_seen = False
env = StreamExecutionEnvironment.get_execution_environment().set_parallelism(2)
(
    env.from_source(NumberSequenceSource(0, 9_999), "numbers")
    .map(first)
    .key_by(lambda k: k)
    .reduce(lambda a, b: a + b)
    .sink_to(DiscardingSink())
)
env.execute("startup")
'''


def alone(program: str) -> float:
    """Seconds from launching ``program`` (SESSION_ALONE or CONTEXT_ALONE) to its Spark up."""
    started = time.time()
    out = subprocess.run(
        [sys.executable, "-c", program % SLOTS], capture_output=True, text=True, check=True
    ).stdout
    return float(out.split()[-1]) - started


def first_record(work: str) -> float:
    marks = tempfile.mkdtemp(dir=work)
    job = os.path.join(work, "startup_job.py")
    with open(job, "w") as f:
        f.write(JOB)
    barrierflow = [sys.executable, "-m", "barrierflow.cli"]
    started = time.time()
    run = subprocess.run(
        [*barrierflow, "run", job, marks],
        capture_output=True, text=True, cwd=work,
    )  # fmt: skip
    if run.returncode != 0:
        raise SystemExit(f"barrierflow run failed ({run.returncode}):\n{run.stderr[-3000:]}")
    times = []
    for name in os.listdir(marks):
        with open(os.path.join(marks, name)) as f:
            times.append(float(f.read()))
    if not times:
        raise SystemExit("the job processed no record: no first-record mark was written")
    return min(times) - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    sessions: list[float] = []
    contexts: list[float] = []
    firsts: list[float] = []
    with tempfile.TemporaryDirectory(prefix="barrierflow-startup-") as work:
        for r in range(args.rounds):
            sessions.append(alone(SESSION_ALONE))
            contexts.append(alone(CONTEXT_ALONE))
            firsts.append(first_record(work))
            print(
                f"round {r + 1}: session alone {sessions[-1]:.2f} s, "
                f"context alone {contexts[-1]:.2f} s, "
                f"barrierflow run -> first record {firsts[-1]:.2f} s",
                flush=True,
            )
    session, first = statistics.median(sessions), statistics.median(firsts)
    context = statistics.median(contexts)
    print(
        f"median: session alone {session:.2f} s, context alone {context:.2f} s, "
        f"first record {first:.2f} s, difference {first - session:.2f} s (goal: at most 1 s), "
        f"over the context alone {first - context:.2f} s"
    )
    print(
        json.dumps(
            {
                "session_alone_s": [round(s, 3) for s in sessions],
                "context_alone_s": [round(s, 3) for s in contexts],
                "first_record_s": [round(s, 3) for s in firsts],
                "session_alone_median_s": round(session, 3),
                "context_alone_median_s": round(context, 3),
                "first_record_median_s": round(first, 3),
                "difference_s": round(first - session, 3),
                "over_context_s": round(first - context, 3),
            }
        )
    )


if __name__ == "__main__":
    main()
