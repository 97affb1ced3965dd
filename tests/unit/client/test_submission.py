"""Submission from the environment's side: the context ``barrierflow run`` installs reaches the
environments created under it (its configuration under the program's settings, its other
options over them), a whole job runs through the executor it names, and a dry run plans
without running."""

from __future__ import annotations

import pytest

from barrierflow.client.dry_run import DryRunFinished
from barrierflow.client.submission_context import (
    SubmissionContext,
    current_submission_context,
    installed,
)
from barrierflow.cluster.job_plan import JobPlan
from barrierflow.common import Configuration
from barrierflow.datastream import StreamExecutionEnvironment
from barrierflow.datastream.connectors.discarding import DiscardingSink
from barrierflow.datastream.connectors.file_system import FileSink
from barrierflow.datastream.connectors.number_seq import NumberSequenceSource
from barrierflow.errors import ConfigurationError
from barrierflow.testing.thread_deployer import ThreadExecutor
from tests.jobs.odd_even import read_committed

NO_REST = Configuration({"rest.port": -1})


def _program(env: StreamExecutionEnvironment) -> StreamExecutionEnvironment:
    env.from_source(NumberSequenceSource(1, 10), "numbers").sink_to(DiscardingSink())
    return env


def test_an_environment_takes_the_installed_context_configuration_under_its_own_settings():
    context = SubmissionContext(
        configuration=Configuration({"parallelism.default": 3, "pipeline.max-parallelism": 64})
    )
    with installed(context):
        env = StreamExecutionEnvironment().set_max_parallelism(32)
    assert (env.get_parallelism(), env.get_max_parallelism()) == (3, 32)
    assert StreamExecutionEnvironment().get_parallelism() == 1  # made outside the context


def test_the_context_is_installed_only_inside_its_block():
    context = SubmissionContext(parallelism=2)
    with pytest.raises(RuntimeError), installed(context):
        assert current_submission_context() is context
        raise RuntimeError("the job file failed")
    assert current_submission_context() == SubmissionContext()


def test_the_contexts_options_win_over_the_programs_when_the_job_is_submitted(tmp_path):
    env = _program(StreamExecutionEnvironment().set_parallelism(4))
    env.get_checkpoint_config().set_checkpoint_storage(str(tmp_path / "program"))
    env.set_restore_path(str(tmp_path / "program-savepoint"))
    context = SubmissionContext(
        parallelism=2,
        checkpoint_dir=str(tmp_path / "command-line"),
        restore_path=str(tmp_path / "savepoint"),
        allow_non_restored_state=True,
        resume_job_id="abc123",
    )

    pipeline = context.over(env._pipeline("job"))

    assert pipeline.parallelism == 2
    assert pipeline.checkpointing.storage == str(tmp_path / "command-line")
    assert pipeline.restore_path == str(tmp_path / "savepoint")
    assert pipeline.allow_non_restored_state and pipeline.resume_job_id == "abc123"
    assert env.get_parallelism() == 4  # the program's own settings stay as it made them
    untouched = SubmissionContext().over(env._pipeline("job"))
    assert untouched.parallelism == 4 and untouched.restore_path.endswith("program-savepoint")


def test_a_job_id_to_resume_that_names_no_directory_is_refused_at_submission():
    pipeline = _program(StreamExecutionEnvironment())._pipeline("job")
    with pytest.raises(ConfigurationError, match="a job id is letters and digits"):
        SubmissionContext(resume_job_id="../etc").over(pipeline)


def test_the_pipeline_keeps_what_was_declared_when_it_was_built():
    env = _program(StreamExecutionEnvironment())
    env.enable_checkpointing(500)
    pipeline = env._pipeline("job")
    env.enable_checkpointing(9_000).set_parallelism(5)
    env.get_checkpoint_config().set_checkpoint_storage("file:///elsewhere")
    assert pipeline.checkpointing.interval_ms == 500 and pipeline.parallelism == 1
    assert pipeline.checkpointing.storage is None


def test_a_whole_job_runs_on_threads_through_the_executor_the_context_names(tmp_path):
    seen = []
    context = SubmissionContext(
        configuration=NO_REST, executor=ThreadExecutor(), on_job_master=seen.append
    )
    out = str(tmp_path / "out")
    with installed(context):
        env = StreamExecutionEnvironment().set_parallelism(2)
    env.enable_checkpointing(50)
    env.get_checkpoint_config().set_checkpoint_storage(str(tmp_path / "checkpoints"))
    env.from_source(NumberSequenceSource(1, 500), "numbers").map(lambda x: [x]).sink_to(
        FileSink(out)
    )

    result = env.execute("on threads")  # the context's executor, installed or not by now

    assert [m.plan.job_id for m in seen] == [str(result.get_job_id())]
    assert sorted(r[0] for r in read_committed(out)) == list(range(1, 501))


class NeverRuns:
    def job_master(self, plan: JobPlan):
        raise AssertionError("a dry run must not reach an executor")


def test_a_dry_run_plans_the_job_reports_and_runs_nothing():
    with installed(SubmissionContext(dry_run=True, executor=NeverRuns())):
        env = _program(StreamExecutionEnvironment().set_parallelism(2))
    with pytest.raises(DryRunFinished) as finished:
        env.execute("planned only")
    assert finished.value.ok
    assert finished.value.report.startswith("Dry run of job 'planned only': ")
    assert "No snapshot to restore from" in finished.value.report
