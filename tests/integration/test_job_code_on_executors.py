"""A job whose functions come from a module the executors cannot import: the slots never start,
and a restart would fail the same way, so the job fails at once, whatever its restart strategy,
with an error that names the module and says how to ship it."""

from __future__ import annotations

import importlib

import pytest

from barrierflow.common import RestartStrategies
from barrierflow.datastream import StreamExecutionEnvironment
from barrierflow.datastream.connectors.discarding import DiscardingSink
from barrierflow.datastream.connectors.number_seq import NumberSequenceSource
from barrierflow.errors import JobExecutionError

pytestmark = pytest.mark.spark


def test_a_job_whose_code_the_executors_cannot_import_fails_without_restarts(
    spark, tmp_path, monkeypatch
):
    (tmp_path / "driver_only_functions.py").write_text("def double(v):\n    return 2 * v\n")
    monkeypatch.syspath_prepend(str(tmp_path))  # the driver's path only, not the workers'
    functions = importlib.import_module("driver_only_functions")
    env = StreamExecutionEnvironment().set_parallelism(1)
    env.enable_checkpointing(200)
    env.get_checkpoint_config().set_checkpoint_storage(str(tmp_path / "checkpoints"))
    env.set_restart_strategy(RestartStrategies.fixed_delay_restart(5, 100))
    env.from_source(NumberSequenceSource(1, 100), "numbers").map(functions.double).sink_to(
        DiscardingSink()
    )
    with pytest.raises(JobExecutionError) as failed:
        env.execute("unloadable")
    message = str(failed.value)
    assert "failed after 1 attempt(s); the failure is not one a restart can fix" in message
    assert "No module named 'driver_only_functions'" in message
    assert "--py-files" in message
