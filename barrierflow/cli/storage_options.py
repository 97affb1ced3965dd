"""The options of every command that opens storage itself (``checkpoints list/show``,
``savepoint``, ``stop``, ``cancel``): a configuration file and ``-D key=value``, over
``BARRIERFLOW_CONF``, read for the file systems' settings (``s3.endpoint``, ``s3.access-key``,
...) and the checkpoint directory. ``run`` reads the same through the job's environment.

**I/O:** reads the configuration files.
"""

from __future__ import annotations

from typing import Annotated

import typer

from barrierflow.api.configuration import Configuration
from barrierflow.checkpoint import file_systems
from barrierflow.cli.app import fail
from barrierflow.errors import ConfigurationError

ConfFileOption = Annotated[
    str | None,
    typer.Option(
        "--conf",
        help="A YAML configuration file of Flink keys (s3.endpoint, ...), over BARRIERFLOW_CONF.",
    ),
]
DynamicOption = Annotated[
    list[str] | None,
    typer.Option(
        "-D",
        help="key=value, over --conf; repeatable (-D s3.endpoint=http://localhost:9000).",
    ),
]


def configure(conf_file: str | None, dynamic: list[str] | None) -> Configuration:
    """The configuration of this command, with this process's file systems initialized from
    it; an invalid one ends the command (exit code 2) naming the setting."""
    try:
        configuration = Configuration.from_environment()
        if conf_file:
            configuration = configuration.merge(Configuration.from_yaml_file(conf_file))
        configuration = configuration.merge(Configuration.from_dynamic_properties(dynamic or []))
        file_systems.initialize(file_systems.settings_from(configuration))
    except ConfigurationError as e:
        raise fail(f"Invalid configuration: {e}", 2) from e
    return configuration
