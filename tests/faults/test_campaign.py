"""A small fault campaign: five runs of ``bench/chaos.py`` whose seeds change every day, so that
the suite keeps meeting schedules nobody chose, while any day's failure can be replayed from its
seed. The runner starts the servers its runs need from ``tests/servers``, as the suite's
fixtures do, and compares each run's committed output with a failure-free run, record by record.

**I/O:** a ``barrierflow run`` process per driver of each run, Spark, the servers, a temporary
directory.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.faults, pytest.mark.campaign]

REPO = Path(__file__).resolve().parents[2]
RUNS = 5
# Every fault kind. The Kafka broker's restart is drawn again since seed 5027: the test broker
# (noida-db) loses transactions across a restart that Kafka keeps; the sink refuses what it can
# tell (seeds 20261125000 and 5027), and a run whose missing records all sit behind a
# transaction the broker never ended is judged broker-lost, apart from FAILED
# (docs/reliability.md). The S3 server's restart is drawn again since seed 1079 was fixed. The
# three kinds of driver high availability put a run's drivers under it (a lease of 2 s).
FAULTS = (
    "kill_task",
    "kill_driver",
    "kill_during_restore",
    "storage_error",
    "storage_stall",
    "restart_s3",
    "restart_kafka",
    "restart_postgres",
    "cut_connection",
    "cancel_with_savepoint",
    "kill_driver_restart",
    "kill_driver_standby",
    "pause_leader",
)


@pytest.mark.timeout(900)  # five runs and up to five failure-free references
def test_campaign_of_the_day(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(REPO / "bench" / "chaos.py"), "--runs", str(RUNS), "--date-seeds",
         "--faults", ",".join(FAULTS), "--slice", str(RUNS), "--work", str(tmp_path)],
        capture_output=True, text=True, cwd=REPO, timeout=880,
        env={**os.environ, "PYSPARK_PYTHON": sys.executable},
    )  # fmt: skip
    print(done.stdout)
    lines = [line for line in done.stdout.splitlines() if line.startswith("seed=")]
    failed = [line for line in lines if "outcome=FAILED" in line]
    seeds = [re.match(r"seed=(\d+)", line).group(1) for line in failed]
    replay = "\n".join(f"  python bench/chaos.py --seed {seed}" for seed in seeds)
    assert done.returncode == 0 and len(lines) == RUNS, (
        f"the campaign of the day failed (exit {done.returncode}, {len(lines)} of {RUNS} runs "
        f"reported):\n" + "\n".join(failed) + f"\nreplay with:\n{replay}\n" + done.stderr[-3000:]
    )
