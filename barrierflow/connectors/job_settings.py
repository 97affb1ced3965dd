"""``JobSettings``'s public path, which connectors' ``check`` takes (``interfaces/
job_settings.py`` defines it). Performs no I/O."""

from barrierflow.connectors.interfaces.job_settings import JobSettings

__all__ = ["JobSettings"]
