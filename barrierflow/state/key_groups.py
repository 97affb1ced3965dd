"""The key group of a key: a hash that is the same in every process, modulo
``max_parallelism``, memoized on the per-record path.

Key groups are the unit in which keyed state is assigned to subtasks and rescaled; which
subtask owns which range of them is ``protocol/key_group_range.py``'s (Flink's
``KeyGroupRangeAssignment`` is both).

Performs no I/O.
"""

from __future__ import annotations

import numbers
import struct
import zlib
from collections.abc import Callable, Iterable
from itertools import compress, repeat
from operator import is_
from typing import Any

_MASK64 = (1 << 64) - 1


class UnhashableKeyError(TypeError):
    """A key of a type that has no stable hash across processes."""


class KeyList(list[Any]):
    """A list that is a key (``key_by(lambda r: [r[0]])``): PyFlink keys by the key's bytes,
    so a list is a key there; here keys are dict keys and hashed, so a key selector's list
    becomes this list, hashed and routed as the tuple of its items. It is a list: it equals
    the list it was made of and prints as one."""

    __slots__ = ()

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(self))


def as_key(key: object) -> object:
    """``key``, a list made a ``KeyList`` (its lists too)."""
    if key.__class__ is list:
        return KeyList(map(as_key, key))
    return key


def hashable_keys(key_selector: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``key_selector`` whose list keys are ``KeyList``s, for keyed state, timers and routing.

    The two per-record paths of every keyed job, routing by key group and the keyed process
    operator, call the user's selector itself (``unwrapped``) and turn a list into a key where
    they use it: a call of this wrapper per record and path cost the keyed count about a
    tenth of its throughput."""

    def select(record: Any) -> Any:
        key = key_selector(record)
        return as_key(key) if key.__class__ is list else key

    select.unwrapped = key_selector  # type: ignore[attr-defined]
    return select


def unwrapped(select: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """The user's own key selector under ``hashable_keys``, for a path that makes its list keys
    keys itself (``as_key``); any other selector as it is."""
    return getattr(select, "unwrapped", select)


def _fmix64(h: int) -> int:
    """MurmurHash3's 64-bit finalizer: spreads the bits of an integer hash."""
    h ^= h >> 33
    h = (h * 0xFF51AFD7ED558CCD) & _MASK64
    h ^= h >> 33
    h = (h * 0xC4CEB9FE1A85EC53) & _MASK64
    h ^= h >> 33
    return h


def stable_hash(key: object) -> int:
    """A hash of ``key`` that is the same in every Python process.

    Python's built-in ``hash()`` is randomized per process for str and bytes, so routing with it
    would send one key to different subtasks from different producers. Supported: None, bool,
    int, float, str, bytes, and tuples and ``KeyList``s of these.
    """
    if key is None:
        return 0x9E3779B97F4A7C15
    if isinstance(key, bool | int):
        return _fmix64(int(key) & _MASK64 ^ (int(key) >> 64) & _MASK64)
    if isinstance(key, str):
        return _fmix64(zlib.crc32(key.encode("utf-8", "surrogatepass")) | len(key) << 32)
    if isinstance(key, bytes):
        return _fmix64(zlib.crc32(key) | len(key) << 32)
    if isinstance(key, float):
        if key.is_integer():
            return stable_hash(int(key))
        return _fmix64(struct.unpack("<Q", struct.pack("<d", key))[0])
    if isinstance(key, numbers.Number) and not isinstance(key, complex):
        # Decimal, Fraction, numpy scalars: equal numbers are equal dict keys, so they must
        # land in the same key group as the int or float they equal. (``Number`` declares
        # neither conversion; its kinds here have both.)
        number: Any = key
        if number == int(number):
            return stable_hash(int(number))
        if number == float(number):
            return stable_hash(float(number))
    if isinstance(key, tuple | KeyList):
        h = 0x27D4EB2F165667C5 ^ len(key)
        for item in key:
            h = _fmix64((h * 31 + stable_hash(item)) & _MASK64)
        return h
    raise UnhashableKeyError(
        f"key {key!r:.200} of type {type(key).__name__} has no stable hash; key_by must return "
        "None, bool, int, float, str, bytes or a tuple of these"
    )


def assign_to_key_group(key: object, max_parallelism: int) -> int:
    return stable_hash(key) % max_parallelism


class KeyGroupCache:
    """Memoizes ``key -> key group`` for the per-record path; keys repeat, hashing is slow.

    Bounded: cleared when it reaches ``capacity`` entries.
    """

    __slots__ = ("_cache", "_capacity", "_max_parallelism")

    def __init__(self, max_parallelism: int, capacity: int = 1 << 20) -> None:
        self._max_parallelism = max_parallelism
        self._capacity = capacity
        self._cache: dict[object, int] = {}

    def key_group(self, key: object) -> int:
        try:
            return self._cache[key]
        except KeyError:
            pass
        except TypeError:
            if key.__class__ is list:  # from an unwrapped selector: keyed as its KeyList
                return self.key_group(as_key(key))
            raise UnhashableKeyError(
                f"key {key!r:.200} of type {type(key).__name__} is not hashable"
            ) from None
        if len(self._cache) >= self._capacity:
            self._cache.clear()
        kg = self._cache[key] = stable_hash(key) % self._max_parallelism
        return kg

    def key_groups(self, keys: Iterable[object]) -> list[int]:
        """``key_group`` of each key, in order: a C-level lookup of each once every key is
        cached, so a snapshot hashes only the keys new since the last one."""
        keys = list(keys)
        cache = self._cache
        try:
            return list(map(cache.__getitem__, keys))
        except KeyError:
            pass
        key_groups = list(map(cache.get, keys))
        missing = list(compress(keys, map(is_, key_groups, repeat(None))))
        if len(cache) + len(missing) > self._capacity:
            return list(map(self.key_group, keys))
        for key in missing:
            cache[key] = stable_hash(key) % self._max_parallelism
        return list(map(cache.__getitem__, keys))
