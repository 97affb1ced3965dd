"""PyFlink's own example programs, each run as a whole process on barrierflow and on PyFlink
2.3, one after the other, interleaved: seconds of wall time from start to exit, and their
ratio (start-up included on both: Spark's on one side, Flink's JVM and Python workers on the
other).

The programs are read from the PyFlink that ``PYFLINK_PYTHON`` names, the ones
``tests/compat/test_pyflink_examples.py`` compares (its document lists those it does not); only
their import lines change for barrierflow. Runs with this Python, on barrierflow's default
``local[N]`` Spark.

    PYFLINK_PYTHON=/path/to/pyflink/bin/python python bench/pyflink_examples.py --rounds 3
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.compat.test_pyflink_examples import (  # noqa: E402 - the repository's tests
    IMPORT,
    NOT_COMPARED,
    RUN_EXAMPLE,
    examples,
    examples_root,
    listed,
)


def _seconds(command: list[str], cwd: str, env: dict[str, str]) -> float:
    started = time.monotonic()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    elapsed = time.monotonic() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr[-2000:]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    root = examples_root()
    if root is None:
        raise SystemExit("PYFLINK_PYTHON must name a Python with apache-flink installed")
    pyflink = os.environ["PYFLINK_PYTHON"]
    compared = [e for e in examples() if e not in listed(NOT_COMPARED)]
    pyflink_env = {**os.environ, "PATH": f"{Path(pyflink).parent}{os.pathsep}{os.environ['PATH']}"}
    ours_env = {**os.environ, "PYTHONPATH": str(ROOT), "PYSPARK_PYTHON": sys.executable}
    times: dict[str, tuple[list[float], list[float]]] = {e: ([], []) for e in compared}
    with tempfile.TemporaryDirectory() as work:
        for _ in range(args.rounds):
            for example in compared:
                program = root / example
                rewritten = Path(work) / program.name
                rewritten.write_text(IMPORT.sub(r"\1barrierflow", program.read_text()))
                ours = [sys.executable, "-c", RUN_EXAMPLE, str(rewritten)]
                theirs = [pyflink, "-c", RUN_EXAMPLE, str(program)]
                times[example][0].append(_seconds(ours, work, ours_env))
                times[example][1].append(_seconds(theirs, work, pyflink_env))
    print(f"{'example':45} {'barrierflow s':>14} {'PyFlink s':>10} {'PyFlink/ours':>12}")
    for example, (ours_s, theirs_s) in times.items():
        a, b = statistics.median(ours_s), statistics.median(theirs_s)
        print(f"{example:45} {a:14.1f} {b:10.1f} {b / a:12.2f}")


if __name__ == "__main__":
    main()
