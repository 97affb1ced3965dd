"""The README's tour of checkpoint output is what a run prints: each line of it (its numbers,
ids and times aside) appears in the console of a real run of the job it describes, a failure
and a restore included."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]
JOB = """
import sys
from barrierflow import StreamExecutionEnvironment
from tests.jobs import odd_even

base = sys.argv[1]
env = StreamExecutionEnvironment().set_parallelism(2)
odd_even.build(env, 20000, f"{base}/out", f"{base}/ckpt", interval_ms=200, delay_s=0.0002,
               fault=odd_even.Fault("raise", 6000, f"{base}/fired", f"{base}/ckpt"))
env.execute("odd-even")
"""


def tour_lines() -> list[str]:
    readme = (ROOT / "README.md").read_text()
    block = readme.split("<!-- tour:start -->", 1)[1].split("<!-- tour:end -->", 1)[0]
    return [line for line in block.splitlines() if line and not line.startswith("```")]


def pattern(line: str) -> re.Pattern:
    """The line with its numbers and job id free: what any run of the job prints."""
    level, message = line.split(" ", 1)
    parts = re.split(r"([0-9a-f]{32}|\d+(?:\.\d+)?)", message)
    free = {True: r"[0-9a-f]{32}", False: r"\d+(?:\.\d+)?"}
    text = "".join(
        free[len(part) == 32] if i % 2 else re.escape(part) for i, part in enumerate(parts)
    )
    return re.compile(rf"\b{level} {text}$", re.MULTILINE)


def test_every_line_of_the_readme_tour_appears_in_a_real_run(tmp_path):
    job = tmp_path / "job.py"
    job.write_text(textwrap.dedent(JOB))
    run = subprocess.run(
        [sys.executable, "-m", "barrierflow.cli", "run", str(job), "--", str(tmp_path)],
        env={**os.environ, "PYTHONPATH": str(ROOT), "PYSPARK_PYTHON": sys.executable,
             "BARRIERFLOW_HOME": str(tmp_path / "home")},
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    lines = tour_lines()
    assert len(lines) >= 6
    missing = [line for line in lines if not pattern(line).search(run.stderr)]
    assert not missing, f"README tour lines no run printed: {missing}\n{run.stderr[-3000:]}"


def test_the_pattern_frees_numbers_and_ids_and_nothing_else():
    line = "INFO Completed checkpoint 1 in 1108 ms: 668 B (668 B written), 4 tasks"
    assert pattern(line).search(
        "12:00 INFO Completed checkpoint 12 in 3.5 ms: 9 B (9 B written), 2 tasks"
    )
    assert not pattern(line).search("12:00 INFO Completed checkpoint 12 in 3 ms: 9 B, 2 tasks")
