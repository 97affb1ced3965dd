"""What ``barrierflow run`` says when the job file fails before a job runs: the error's type,
its message and the user's line, in one short block, exit status 1 (2 for bad configuration);
``--verbose`` adds the whole traceback."""

from __future__ import annotations

import textwrap

from typer.testing import CliRunner

from barrierflow.cli import app


def run(tmp_path, source: str, *options: str):
    job = tmp_path / "job.py"
    job.write_text(textwrap.dedent(source))
    result = CliRunner().invoke(app, ["run", str(job), *options])
    return job, result


def test_an_error_of_the_job_file_keeps_its_type_message_and_line(tmp_path):
    job, result = run(
        tmp_path,
        """
        settings = {"input": "in.txt"}
        output = settings["output"]
        """,
    )
    assert result.exit_code == 1, result.output
    assert f"Error in job file {job}: KeyError: 'output'" in result.output
    assert f'File "{job}", line 3, in <module>' in result.output
    assert 'output = settings["output"]' in result.output
    assert "Traceback" not in result.output and "Job failed" not in result.output


def test_a_configuration_error_while_the_job_is_built_names_the_user_s_line(tmp_path):
    job, result = run(
        tmp_path,
        """
        from barrierflow.datastream import StreamExecutionEnvironment

        env = StreamExecutionEnvironment.get_execution_environment()
        env.set_parallelism(0)
        """,
    )
    assert result.exit_code == 2, result.output
    assert "Job failed: ConfigurationError: parallelism must be a positive integer, got 0" in (
        result.output
    )
    assert f'File "{job}", line 5, in <module>' in result.output
    assert "env.set_parallelism(0)" in result.output


def test_verbose_shows_the_whole_traceback(tmp_path):
    _, result = run(tmp_path, "raise ValueError('no good')\n", "--verbose")
    assert result.exit_code == 1
    assert "ValueError: no good" in result.output and "Traceback (most recent call last)" in (
        result.output
    )
