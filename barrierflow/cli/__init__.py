"""The ``barrierflow`` command: run a job file, take savepoints, stop and cancel jobs, inspect
checkpoints. Each group of commands has a module; importing them registers them on ``app``."""

from barrierflow.cli import checkpoint_commands, job_commands, run_command  # noqa: F401
from barrierflow.cli.app import app


def main() -> None:
    app()


__all__ = ["app", "main"]
