"""PyFlink's ``pyflink.common.restart_strategy``."""

from barrierflow.api.restart_strategies import RestartStrategies, RestartStrategyConfiguration

__all__ = ["RestartStrategies", "RestartStrategyConfiguration"]
