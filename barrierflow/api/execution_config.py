"""``env.get_config()``: PyFlink's ExecutionConfig, a view of the environment's settings."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from barrierflow.errors import ConfigurationError

if TYPE_CHECKING:
    from barrierflow.api.environment import StreamExecutionEnvironment


class ExecutionConfig:
    def __init__(self, env: StreamExecutionEnvironment) -> None:
        self._env = env

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
        self._env.set_parallelism(parallelism)
        return self

    def get_parallelism(self) -> int:
        return self._env.get_parallelism()

    def set_max_parallelism(self, max_parallelism: int) -> ExecutionConfig:
        self._env.set_max_parallelism(max_parallelism)
        return self

    def get_max_parallelism(self) -> int:
        return self._env.get_max_parallelism()
