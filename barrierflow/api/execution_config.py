"""``env.get_config()``: PyFlink's ExecutionConfig. It holds the job's parallelism and maximum
parallelism (the environment's setters are its, as in Flink), and shows the watermark interval
and global job parameters of the environment's configuration. Its switches of Flink's Java
runtime (object reuse, the closure cleaner, latency tracking, task cancellation, snapshot
compression, generated uids) are kept with Flink's defaults and read back: they tune what
barrierflow does not have (docs/pyflink-compatibility.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from barrierflow.client.pipeline import check_max_parallelism, check_parallelism
from barrierflow.errors import ConfigurationError
from barrierflow.protocol.key_group_range import DEFAULT_MAX_PARALLELISM

if TYPE_CHECKING:
    from barrierflow.api.configuration import Configuration
    from barrierflow.api.environment import StreamExecutionEnvironment


class ExecutionConfig:
    PARALLELISM_DEFAULT = -1  # Flink's: the parallelism of the environment
    PARALLELISM_UNKNOWN = -2

    def __init__(self, env: StreamExecutionEnvironment) -> None:
        self._env = env
        self._parallelism = 1
        self._max_parallelism = DEFAULT_MAX_PARALLELISM
        # Flink's Java runtime switches, with Flink 2.3's defaults (kept and read back)
        self._switches: dict[str, Any] = {
            "object_reuse": False,
            "closure_cleaner": True,
            "auto_generated_uids": True,
            "snapshot_compression": False,
            "latency_tracking_interval": 0,
            "task_cancellation_interval": 30_000,
            "task_cancellation_timeout": 180_000,
        }

    # --- Flink's runtime switches --------------------------------------------------------

    def _switch(self, name: str, value: Any) -> ExecutionConfig:
        self._switches[name] = value
        return self

    def enable_object_reuse(self) -> ExecutionConfig:
        """Kept: chained operators already hand records on without copying them."""
        return self._switch("object_reuse", True)

    def disable_object_reuse(self) -> ExecutionConfig:
        return self._switch("object_reuse", False)

    def is_object_reuse_enabled(self) -> bool:
        return self._switches["object_reuse"]

    def enable_closure_cleaner(self) -> ExecutionConfig:
        """Kept: functions are pickled whole (cloudpickle); Java has closures to clean."""
        return self._switch("closure_cleaner", True)

    def disable_closure_cleaner(self) -> ExecutionConfig:
        return self._switch("closure_cleaner", False)

    def is_closure_cleaner_enabled(self) -> bool:
        return self._switches["closure_cleaner"]

    def enable_auto_generated_uids(self) -> ExecutionConfig:
        return self._switch("auto_generated_uids", True)

    def disable_auto_generated_uids(self) -> ExecutionConfig:
        """Kept and read back; operators without a uid still get one from their position."""
        return self._switch("auto_generated_uids", False)

    def has_auto_generated_uids_enabled(self) -> bool:
        return self._switches["auto_generated_uids"]

    def set_use_snapshot_compression(self, use_snapshot_compression: bool) -> ExecutionConfig:
        """Kept: barrierflow's snapshot formats are its own (docs/formats.md)."""
        return self._switch("snapshot_compression", bool(use_snapshot_compression))

    def is_use_snapshot_compression(self) -> bool:
        return self._switches["snapshot_compression"]

    def set_latency_tracking_interval(self, interval: int) -> ExecutionConfig:
        """Kept: barrierflow emits no latency markers."""
        return self._switch("latency_tracking_interval", interval)

    def get_latency_tracking_interval(self) -> int:
        return self._switches["latency_tracking_interval"]

    def set_task_cancellation_interval(self, interval: int) -> ExecutionConfig:
        """Kept: a canceled subtask stops itself, watching its JobMaster and its Spark task."""
        return self._switch("task_cancellation_interval", interval)

    def get_task_cancellation_interval(self) -> int:
        return self._switches["task_cancellation_interval"]

    def set_task_cancellation_timeout(self, timeout: int) -> ExecutionConfig:
        return self._switch("task_cancellation_timeout", timeout)

    def get_task_cancellation_timeout(self) -> int:
        return self._switches["task_cancellation_timeout"]

    def configure(self, configuration: Configuration) -> ExecutionConfig:
        """Applies ``parallelism.default`` and ``pipeline.max-parallelism`` if set in
        ``configuration`` (as Flink's ``ExecutionConfig.configure``)."""
        if configuration.contains("parallelism.default"):
            self.set_parallelism(configuration.get("parallelism.default"))
        if configuration.contains("pipeline.max-parallelism"):
            self.set_max_parallelism(configuration.get("pipeline.max-parallelism"))
        return self

    def set_auto_watermark_interval(self, interval: int) -> ExecutionConfig:
        """Milliseconds between two watermarks of a timestamp assigner (0: at the end of
        input only)."""
        self._env.configure({"pipeline.auto-watermark-interval": interval})
        return self

    def get_auto_watermark_interval(self) -> int:
        return self._env.get_configuration().get("pipeline.auto-watermark-interval")

    def set_global_job_parameters(self, global_job_parameters_dict: dict[str, Any]) -> Any:
        """Parameters every function reads with ``runtime_context.get_job_parameter``."""
        if not isinstance(global_job_parameters_dict, dict):
            raise ConfigurationError(
                "set_global_job_parameters() takes a dict of parameter names to values, got "
                f"{global_job_parameters_dict!r:.100}"
            )
        self._env.configure({"pipeline.global-job-parameters": global_job_parameters_dict})
        return self

    def get_global_job_parameters(self) -> dict[str, str]:
        return dict(self._env.get_configuration().get("pipeline.global-job-parameters"))

    def set_parallelism(self, parallelism: int) -> ExecutionConfig:
        self._parallelism = check_parallelism(parallelism)
        return self

    def get_parallelism(self) -> int:
        return self._parallelism

    def set_max_parallelism(self, max_parallelism: int) -> ExecutionConfig:
        self._max_parallelism = check_max_parallelism(max_parallelism)
        return self

    def get_max_parallelism(self) -> int:
        return self._max_parallelism
