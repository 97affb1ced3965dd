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


# The python.* options barrierflow applies (the job's Python dependencies); it ignores the rest
_PYTHON_OPTIONS = ("python.files", "python.requirements", "python.archives", "python.executable")


def _meaningless_here(key: str) -> bool:
    """Keys of PyFlink's Java side (its Python workers, its jars): a PyFlink program sets them,
    and barrierflow, with no JVM operators, has nothing to do with them."""
    if key in _PYTHON_OPTIONS:
        return False
    return key.startswith("python.") or key in ("pipeline.jars", "pipeline.classpaths")


class Configuration:
    """Validated option values by canonical key; unknown keys and bad values raise at once.
    PyFlink's own keys (``python.*``, ``pipeline.jars``) are kept, with a warning that they do
    nothing here, so that a PyFlink program setting them runs."""

    def __init__(self, values: Mapping[str, Any] | None = None, origin: str = "code") -> None:
        self._values: dict[str, Any] = {}
        self._pyflink_only: dict[str, str] = {}
        for key, value in (values or {}).items():
            self.set(key, value, origin)

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> Configuration:
        return cls(values)

    def set(self, key: str, value: Any, origin: str = "code") -> Configuration:
        if isinstance(key, str) and _meaningless_here(key):
            if key not in self._pyflink_only:
                log.warning("%s: %s is a setting of PyFlink's Java runtime; it does nothing "
                            "in barrierflow", origin, key)  # fmt: skip
            self._pyflink_only[key] = str(value)
            return self
        option, deprecated = lookup(key)
        if deprecated:
            log.warning("%s: %s is deprecated; use %s", origin, key, option.key)
        self._values[option.key] = option.value_of(value, f"{origin}: {key}")
        return self

    def get(self, key: str) -> Any:
        if _meaningless_here(key):
            return self._pyflink_only.get(key)
        option, _ = lookup(key)
        return self._values.get(option.key, option.default)

    def contains(self, key: str) -> bool:
        if _meaningless_here(key):
            return key in self._pyflink_only
        return lookup(key)[0].key in self._values

    # --- PyFlink's names ----------------------------------------------------------------------

    def set_string(self, key: str, value: str) -> Configuration:
        return self.set(key, value)

    set_integer = set_boolean = set_float = set_string

    def get_string(self, key: str, default_value: str) -> str:
        if not self.contains(key):
            return default_value
        value = self.get(key)
        return str(value).lower() if isinstance(value, bool) else str(value)

    def get_integer(self, key: str, default_value: int) -> int:
        return int(self.get(key)) if self.contains(key) else default_value

    def get_boolean(self, key: str, default_value: bool) -> bool:
        return bool(self.get(key)) if self.contains(key) else default_value

    def get_float(self, key: str, default_value: float) -> float:
        return float(self.get(key)) if self.contains(key) else default_value

    def contains_key(self, key: str) -> bool:
        return self.contains(key)

    def key_set(self) -> set[str]:
        return {*self._values, *self._pyflink_only}

    def to_dict(self) -> dict[str, str]:
        return {k: self.get_string(k, "") for k in self.key_set()}

    def remove_config(self, key: str) -> bool:
        if _meaningless_here(key):
            return self._pyflink_only.pop(key, None) is not None
        return self._values.pop(lookup(key)[0].key, None) is not None

    def __iter__(self):
        """The canonical keys that are set."""
        return iter(list(self._values))

    def merge(self, other: Configuration) -> Configuration:
        merged = Configuration()
        merged._values = {**self._values, **other._values}
        merged._pyflink_only = {**self._pyflink_only, **other._pyflink_only}
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
