"""``env.get_config()``: PyFlink's ExecutionConfig. It holds the job's parallelism and maximum
parallelism (the environment's setters are its, as in Flink), and shows the watermark interval
and global job parameters of the environment's configuration."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from barrierflow.client.pipeline import check_max_parallelism, check_parallelism
from barrierflow.errors import ConfigurationError
from barrierflow.protocol.key_group_range import DEFAULT_MAX_PARALLELISM

if TYPE_CHECKING:
    from barrierflow.api.configuration import Configuration
    from barrierflow.api.environment import StreamExecutionEnvironment


class ExecutionConfig:
    def __init__(self, env: StreamExecutionEnvironment) -> None:
        self._env = env
        self._parallelism = 1
        self._max_parallelism = DEFAULT_MAX_PARALLELISM

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
