"""Internal: the implementation of the ``barrierflow`` command, which is the public entry
(``barrierflow --help``; docs/public-api.md).

The ``barrierflow`` command: run a job file, take savepoints, stop and cancel jobs, inspect
and check checkpoints, query state. Each group of commands has a module; importing them
registers them on ``app``."""

from barrierflow.cli import (  # noqa: F401
    checkpoint_commands,
    fsck_command,
    job_commands,
    list_command,
    rescale_command,
    run_command,
    state_commands,
)
from barrierflow.cli.app import app, one_line_summaries

one_line_summaries(app)  # once every command is registered


def main() -> None:
    app()


__all__ = ["app", "main"]
