"""What a user sees on the console of ``barrierflow run``: barrierflow's own lines, the job's
error once with the user's frame, and Spark's Java and Python stack dumps in the log file whose
path is printed, not on the console; on a terminal, a status line under the log that is gone
when the job ends; and the job's exceptions from ``barrierflow exceptions`` after it ended."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark

JOB = Path(__file__).parents[1] / "jobs" / "failing_map.py"
USER_LINE = 'raise ValueError(f"bad record {value}")'
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _env(tmp_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        "BARRIERFLOW_LOG_DIR": str(tmp_path / "logs"),
        "PYTHONPATH": str(Path(__file__).parents[2]),
        "PYSPARK_PYTHON": sys.executable,
    }


def _run_command(tmp_path: Path) -> list[str]:
    return [sys.executable, "-m", "barrierflow.cli", "run", str(JOB), str(tmp_path),
            "-D", "restart-strategy.type=none"]  # fmt: skip


def test_a_failing_job_shows_its_error_once_and_leaves_the_stack_dumps_in_the_spark_log(tmp_path):
    env = _env(tmp_path)
    run = subprocess.run(
        _run_command(tmp_path), env=env, capture_output=True, text=True, timeout=240
    )
    console = run.stdout + run.stderr
    assert run.returncode == 1, console
    assert console.count("ValueError: bad record 5000") == 2, console  # the error, the frame
    assert console.count("Job failed:") == 1, console
    assert USER_LINE in console, console  # the user's line
    for spark_noise in ("\tat org.apache", "PythonException", "Exception in task", "log4j"):
        assert spark_noise not in console, console
    assert "records/s" not in console, console  # no status line off a terminal

    # After the job ended, its exceptions are one command away.
    job_id = re.search(r"Job failing-map \(([0-9a-f]+)\)", console)
    assert job_id is not None, console
    shown = subprocess.run(
        [sys.executable, "-m", "barrierflow.cli", "exceptions", job_id.group(1),
         "--checkpoint-dir", str(tmp_path / "checkpoints")],
        env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert shown.returncode == 0, shown.stdout + shown.stderr
    assert "attempt 1  " in shown.stdout and USER_LINE in shown.stdout, shown.stdout

    printed = re.search(r"Spark's own log and stack dumps go to (\S+)", console)
    assert printed is not None, console
    spark_log = Path(printed.group(1))
    assert spark_log.parent == tmp_path / "logs"
    # Spark's own output went there (its stack dump of the failed stage too, unless the
    # JobMaster canceled the stage before the failed task's error reached Spark).
    assert "log4j" in spark_log.read_text()


def _run_on_a_terminal(command: list[str], env: dict[str, str], timeout_s: float) -> str:
    """Runs ``command`` with a pseudo-terminal (200 columns) as its standard input, output and
    error, and returns what it wrote there."""
    controller, terminal = pty.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))
    process = subprocess.Popen(
        command, stdin=terminal, stdout=terminal, stderr=terminal, env=env, close_fds=True
    )
    os.close(terminal)
    output = bytearray()
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([controller], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(controller, 65536)
                except OSError:  # EIO: every writer closed the terminal
                    break
                if not chunk:
                    break
                output += chunk
            elif process.poll() is not None:
                break
        else:
            pytest.fail(f"barrierflow run still running after {timeout_s} s:\n{output.decode()}")
    finally:
        if process.poll() is None:
            process.kill()
        process.wait()
        os.close(controller)
    return output.decode(errors="replace")


def test_on_a_terminal_a_status_line_shows_the_job_and_goes_before_its_last_lines(tmp_path):
    env = {**_env(tmp_path), "TERM": "xterm-256color", "COLUMNS": "200"}
    env.pop("NO_COLOR", None)
    raw = _run_on_a_terminal(_run_command(tmp_path), env, timeout_s=240)
    screen = ANSI.sub("", raw).replace("\r", "")
    assert "records/s" in screen and "backpressure" in screen, screen  # the status line
    assert "Job failing-map (" in screen, screen  # log lines print above it
    last_status = screen.rindex("records/s")
    assert screen.index("Job failed:") > last_status, screen  # erased before the outcome
    assert USER_LINE in screen[last_status:], screen
    assert "\x1b[?25h" in raw[raw.rindex("records/s") :], raw  # the cursor is back


def test_a_poison_record_stops_the_restarts_and_the_message_names_it(tmp_path):
    """With the default restart strategy, a record the map fails on in every attempt ends the
    job after restart-strategy.max-identical-failures (3) attempts, not for ever."""
    run = subprocess.run(
        [sys.executable, "-m", "barrierflow.cli", "run", str(JOB), str(tmp_path)],
        env=_env(tmp_path), capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    console = run.stdout + run.stderr
    assert run.returncode == 1, console
    assert "failed after 3 attempt(s)" in console, console
    assert (
        "operator 'map-1' (Map) failed the same way in 3 consecutive attempts, on record 5000: "
        "ValueError" in console
    ), console
    assert "restart-strategy.max-identical-failures: 3" in console, console
