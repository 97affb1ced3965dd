"""``barrierflow run --master URL --conf key=value``: Spark settings reach the session the job
builds; ``--conf FILE`` still reads a YAML file of Flink keys."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from barrierflow.cli import app

JOB = """
import json, sys
from barrierflow.client.submission_context import current_submission_context
context = current_submission_context()
with open(sys.argv[0] + ".seen", "w") as f:
    json.dump({
        "master": context.spark_master,
        "spark_conf": dict(context.spark_conf),
        "parallelism": context.configuration.get("parallelism.default"),
    }, f)
"""


def test_master_and_spark_settings_pass_through_and_a_yaml_file_is_still_read(tmp_path):
    job = tmp_path / "job.py"
    job.write_text(JOB)
    conf = tmp_path / "flink.yaml"
    conf.write_text("parallelism.default: 3\n")

    result = CliRunner().invoke(
        app,
        ["run", str(job), "--master", "spark://h:7077", "--conf", "spark.executor.memory=2g",
         "--conf", str(conf), "--conf", "spark.task.cpus = 1"],
    )  # fmt: skip

    assert result.exit_code == 0, result.output
    seen = json.loads((tmp_path / "job.py.seen").read_text())
    assert seen == {
        "master": "spark://h:7077",
        "spark_conf": {"spark.executor.memory": "2g", "spark.task.cpus": "1"},
        "parallelism": 3,
    }
