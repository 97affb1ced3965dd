"""PyFlink's settings and shorthands of ``StreamExecutionEnvironment`` that the environment
only records: the runtime mode, the restart strategy, the buffer timeout, operator chaining,
the checkpointing mode, unaligned checkpoints, the default savepoint directory, the default
local parallelism, and the changelog state backend, which barrierflow refuses rather than
pretend to have.

Performs no I/O.
"""

from __future__ import annotations

import os
from typing import Any

from barrierflow.api.checkpoint_config import CheckpointingMode
from barrierflow.api.execution_mode import RuntimeExecutionMode
from barrierflow.api.restart_strategies import RestartStrategies, RestartStrategyConfiguration
from barrierflow.errors import ConfigurationError

CHANGELOG_REFUSED = (
    "enable_changelog_state_backend(True): barrierflow has no changelog state backend (Flink's "
    "FLIP-158 state changelog, materialized in the background). For small, frequent "
    "checkpoints use incremental RocksDB checkpoints: "
    "env.set_state_backend(EmbeddedRocksDBStateBackend(enable_incremental_checkpointing=True)), "
    "or state.backend.type: rocksdb with execution.checkpointing.incremental: true"
)


class EnvironmentShorthands:
    """Mixed into ``StreamExecutionEnvironment``, whose configuration and checkpoint config
    these read and set."""

    _default_local_parallelism: int = os.cpu_count() or 1
    _restart_strategy: RestartStrategyConfiguration | None = None  # none set: the configuration's
    _buffer_timeout_ms: int = 100

    def configure(self, configuration: Any) -> Any:  # the environment's
        raise NotImplementedError

    def get_configuration(self) -> Any:  # the environment's
        raise NotImplementedError

    def get_checkpoint_config(self) -> Any:  # the environment's
        raise NotImplementedError

    # --- execution ------------------------------------------------------------------------

    def set_runtime_mode(self, execution_mode: RuntimeExecutionMode | str) -> Any:
        """STREAMING (the default), BATCH (bounded inputs; final results only, no
        checkpoints) or AUTOMATIC (BATCH when every source is bounded)."""
        mode = getattr(execution_mode, "value", execution_mode)
        return self.configure({"execution.runtime-mode": mode})

    def set_restart_strategy(
        self, restart_strategy_configuration: RestartStrategyConfiguration
    ) -> Any:
        """``RestartStrategies.no_restart()``, ``fixed_delay_restart(...)``...; each job gets a
        fresh strategy of it. ``fall_back_restart()`` leaves it to ``restart-strategy.*``."""
        if not isinstance(restart_strategy_configuration, RestartStrategyConfiguration):
            raise ConfigurationError(
                "set_restart_strategy() takes a RestartStrategies.* configuration (from "
                f"barrierflow.common), got {restart_strategy_configuration!r}"
            )
        self._restart_strategy = restart_strategy_configuration
        return self

    def get_restart_strategy(self) -> RestartStrategyConfiguration:
        """What ``set_restart_strategy`` set; ``fall_back_restart()`` if nothing was."""
        return self._restart_strategy or RestartStrategies.fall_back_restart()

    def set_buffer_timeout(self, timeout_ms: int) -> Any:
        if not isinstance(timeout_ms, int) or timeout_ms < 1:
            raise ConfigurationError(f"buffer timeout must be >= 1 ms, got {timeout_ms!r}")
        self._buffer_timeout_ms = timeout_ms
        return self

    def get_buffer_timeout(self) -> int:
        return self._buffer_timeout_ms

    # --- operator chaining ------------------------------------------------------------------

    def disable_operator_chaining(self) -> Any:
        """Each operator in a task of its own (``pipeline.operator-chaining.enabled: false``):
        records pass between operators over the network, serialized."""
        self.configure({"pipeline.operator-chaining.enabled": False})
        return self

    def is_chaining_enabled(self) -> bool:
        return bool(self.get_configuration().get("pipeline.operator-chaining.enabled"))

    def is_chaining_of_operators_with_different_max_parallelism_enabled(self) -> bool:
        """Always: barrierflow's jobs have one max parallelism, which every operator shares."""
        return True

    # --- checkpointing ----------------------------------------------------------------------

    def get_checkpointing_mode(self) -> CheckpointingMode:
        return self.get_checkpoint_config().get_checkpointing_mode()

    def get_checkpointing_consistency_mode(self) -> CheckpointingMode:
        return self.get_checkpointing_mode()

    def is_unaligned_checkpoints_enabled(self) -> bool:
        return self.get_checkpoint_config().is_unaligned_checkpoints_enabled()

    def is_force_unaligned_checkpoints(self) -> bool:
        return self.get_checkpoint_config().is_force_unaligned_checkpoints()

    def set_default_savepoint_directory(self, directory: str) -> Any:
        self.configure({"execution.checkpointing.savepoint-dir": directory})
        return self

    def get_default_savepoint_directory(self) -> str | None:
        return self.get_checkpoint_config().savepoint_dir

    def enable_changelog_state_backend(self, enabled: bool) -> Any:
        """Refused with ``True``: barrierflow has no changelog state backend, and a job that
        asked for one must not run believing it has its semantics; the error names what keeps
        checkpoints small instead. ``False`` is recorded."""
        if enabled:
            raise ConfigurationError(CHANGELOG_REFUSED)
        self.configure({"state.changelog.enabled": False})
        return self

    def is_changelog_state_backend_enabled(self) -> bool | None:
        """None unless the program or the configuration said (as PyFlink's); only False can
        be said here."""
        configuration = self.get_configuration()
        if not configuration.contains("state.changelog.enabled"):
            return None
        return bool(configuration.get("state.changelog.enabled"))

    # --- local execution --------------------------------------------------------------------

    def set_default_local_parallelism(self, parallelism: int) -> None:
        """Recorded for every environment, as Flink's static setting, and read back; Flink's
        local environments take it as their parallelism, barrierflow's take
        ``parallelism.default`` (1) wherever they run, so that a job's parallelism, and its
        key groups' owners, do not follow the machine's cores."""
        if isinstance(parallelism, bool) or not isinstance(parallelism, int) or parallelism < 1:
            raise ConfigurationError(
                f"default local parallelism must be a positive int, got {parallelism!r}"
            )
        EnvironmentShorthands._default_local_parallelism = parallelism

    def get_default_local_parallelism(self) -> int:
        return EnvironmentShorthands._default_local_parallelism

    def close(self) -> None:
        """Nothing to release: a job's resources end with the job."""
