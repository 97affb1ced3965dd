"""Configuration: Flink-style keys from a YAML file, the environment and ``-D`` overrides.

Sources, later ones winning: the file named by ``BARRIERFLOW_CONF``, the file given to
``barrierflow run --conf``, then ``-D key=value``. Settings made in the job's code win over all of
them, as in Flink. Flink 2.x's YAML may nest keys (``execution: {checkpointing: {interval: 1s}}``)
or write them flat (``execution.checkpointing.interval: 1s``); both are read.

**I/O:** reading the YAML file only.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Mapping
from typing import Any

import yaml

from barrierflow.api.config_options import lookup
from barrierflow.errors import ConfigurationError

log = logging.getLogger("barrierflow.config")

ENV_VARIABLE = "BARRIERFLOW_CONF"


def _flatten(mapping: Mapping, prefix: str = "") -> Iterable[tuple[str, Any]]:
    for key, value in mapping.items():
        full = f"{prefix}{key}"
        if isinstance(value, Mapping):
            yield from _flatten(value, f"{full}.")
        else:
            yield full, value


class Configuration:
    """Validated option values by canonical key; unknown keys and bad values raise at once."""

    def __init__(self, values: Mapping[str, Any] | None = None, origin: str = "code") -> None:
        self._values: dict[str, Any] = {}
        for key, value in (values or {}).items():
            self.set(key, value, origin)

    def set(self, key: str, value: Any, origin: str = "code") -> Configuration:
        option, deprecated = lookup(key)
        if deprecated:
            log.warning("%s: %s is deprecated; use %s", origin, key, option.key)
        self._values[option.key] = option.value_of(value, f"{origin}: {key}")
        return self

    def set_string(self, key: str, value: str) -> Configuration:
        """PyFlink's name."""
        return self.set(key, value)

    def get(self, key: str) -> Any:
        option, _ = lookup(key)
        return self._values.get(option.key, option.default)

    def contains(self, key: str) -> bool:
        return lookup(key)[0].key in self._values

    def __iter__(self):
        """The canonical keys that are set."""
        return iter(list(self._values))

    def merge(self, other: Configuration) -> Configuration:
        merged = Configuration()
        merged._values = {**self._values, **other._values}
        return merged

    @classmethod
    def from_yaml_file(cls, path: str) -> Configuration:
        try:
            with open(path) as f:
                data = yaml.safe_load(f) or {}
        except OSError as e:
            raise ConfigurationError(f"cannot read configuration file {path}: {e}") from e
        except yaml.YAMLError as e:
            raise ConfigurationError(f"configuration file {path} is not valid YAML: {e}") from e
        if not isinstance(data, Mapping):
            raise ConfigurationError(
                f"configuration file {path} must hold a mapping of keys to values"
            )
        conf = cls()
        for key, value in _flatten(data):
            conf.set(key, value, origin=path)
        return conf

    @classmethod
    def from_dynamic_properties(cls, properties: Iterable[str]) -> Configuration:
        """``-D key=value`` pairs."""
        conf = cls()
        for prop in properties:
            key, sep, value = prop.partition("=")
            if not sep or not key.strip():
                raise ConfigurationError(f"-D {prop!r}: expected key=value")
            conf.set(key.strip(), value.strip(), origin=f"-D {key.strip()}")
        return conf

    @classmethod
    def from_environment(cls) -> Configuration:
        path = os.environ.get(ENV_VARIABLE)
        return cls.from_yaml_file(path) if path else cls()
