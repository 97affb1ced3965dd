"""``barrierflow run`` starts Spark's JVM while the job file is imported only for a file that
executes a job and builds no Spark session of its own (whose JVM settings must apply)."""

from __future__ import annotations

import pytest

from barrierflow.cli.run_command import _may_start_spark_early

PLAIN = """
from barrierflow.datastream import StreamExecutionEnvironment
env = StreamExecutionEnvironment.get_execution_environment()
env.from_collection([1, 2]).print()
env.execute("plain")
"""


@pytest.mark.parametrize(
    "source, early",
    [
        (PLAIN, True),
        (PLAIN.replace('env.execute("plain")', ""), False),
        ("from pyspark.sql import SparkSession\n" + PLAIN, False),
        (
            PLAIN.replace(
                "get_execution_environment()",
                "get_execution_environment().set_spark_session(spark)",
            ),
            False,
        ),
        ("import pyspark\n" + PLAIN, False),
    ],
    ids=["executes", "never-executes", "own-session", "given-session", "imports-pyspark"],
)
def test_the_jvm_starts_early_only_for_a_job_file_that_executes_without_a_session_of_its_own(
    tmp_path, monkeypatch, source, early
):
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    job = tmp_path / "job.py"
    job.write_text(source)

    assert _may_start_spark_early(job) is early


def test_under_spark_submit_the_jvm_is_spark_submits(tmp_path, monkeypatch):
    monkeypatch.setenv("PYSPARK_GATEWAY_PORT", "12345")
    job = tmp_path / "job.py"
    job.write_text(PLAIN)

    assert _may_start_spark_early(job) is False
