"""One configuration option (its key, how its value is parsed and checked, its default), and
Flink's syntaxes for durations and memory sizes. Here, below every layer, so that a part that
reads options of its own (a state backend in the registry) declares them where it lives;
``api/config_options.py`` lists every option. Performs no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from barrierflow.errors import ConfigurationError

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$")
_DURATION_UNITS = {
    "": 1, "ms": 1, "milli": 1, "millis": 1, "millisecond": 1, "milliseconds": 1,
    "s": 1000, "sec": 1000, "secs": 1000, "second": 1000, "seconds": 1000,
    "min": 60_000, "mins": 60_000, "minute": 60_000, "minutes": 60_000, "m": 60_000,
    "h": 3_600_000, "hour": 3_600_000, "hours": 3_600_000,
    "d": 86_400_000, "day": 86_400_000, "days": 86_400_000,
}  # fmt: skip
_MEMORY = re.compile(r"^\s*(\d+)\s*([a-z]*)\s*$")
_MEMORY_UNITS = {
    "": 1, "b": 1, "bytes": 1, "k": 1024, "kb": 1024, "kib": 1024,
    "m": 1024**2, "mb": 1024**2, "mib": 1024**2, "g": 1024**3, "gb": 1024**3, "gib": 1024**3,
}  # fmt: skip


def parse_duration_ms(value: Any) -> int:
    """Flink's duration syntax: ``500 ms``, ``10 s``, ``1 min``, ``2 h``; a bare number is ms."""
    if isinstance(value, bool):
        raise ValueError("a duration, not a boolean")
    if isinstance(value, int | float):
        return int(value)
    m = _DURATION.match(str(value).lower())
    if not m or m.group(2) not in _DURATION_UNITS:
        raise ValueError("a duration such as '500 ms', '10 s', '1 min' or '2 h'")
    return int(float(m.group(1)) * _DURATION_UNITS[m.group(2)])


def parse_memory_bytes(value: Any) -> int:
    """Flink's memory size syntax: ``20kb``, ``1 mb``; a bare number is bytes."""
    if isinstance(value, bool):
        raise ValueError("a memory size, not a boolean")
    if isinstance(value, int):
        return value
    m = _MEMORY.match(str(value).lower())
    if not m or m.group(2) not in _MEMORY_UNITS:
        raise ValueError("a memory size such as '4096', '20 kb' or '1 mb'")
    return int(m.group(1)) * _MEMORY_UNITS[m.group(2)]


@dataclass(frozen=True)
class Option:
    key: str
    parse: Callable[[Any], Any]
    default: Any
    description: str
    deprecated_keys: tuple[str, ...] = ()
    check: Callable[[Any], bool] | None = None
    check_text: str = ""

    def value_of(self, raw: Any, given_as: str) -> Any:
        try:
            value = self.parse(raw)
        except ValueError as e:
            raise ConfigurationError(f"{given_as}: {raw!r} is not valid; expected {e}") from None
        if self.check is not None and not self.check(value):
            raise ConfigurationError(f"{given_as}: {raw!r} is not valid; {self.check_text}")
        return value
