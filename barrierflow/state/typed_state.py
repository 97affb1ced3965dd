"""State of a declared type (``ValueStateDescriptor("total", Types.FLOAT())``): what a function
stores is checked against the type as PyFlink's serializers check it, and refused where it is
stored, naming the state, when it cannot be of the type. The value itself is stored as given:
PyFlink's state cache hands a function back the very object it stored (a FLOAT state updated
with 0.1 reads back 0.1 in PyFlink 2.3, not its 32-bit rounding), so converting it would print
other values than PyFlink. RocksDB, which encodes every value, gives back what MessagePack
decodes to the declared type (``value_codec.py``): a TUPLE given as a list comes back a tuple,
a DOUBLE given as an int a float; a value MessagePack cannot hold is pickled and comes back as
stored.

A wrapper around the backend's state object: reads go straight to it; states without a type
are not wrapped. A backend value state that offers ``direct_store`` (the heap's) is written
into directly once a value passes the check.

**Threading:** the task thread only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from barrierflow.declared_types.conversion import Converter, plain_type, value_converter
from barrierflow.state.descriptors import StateDescriptor, StateKind
from barrierflow.state.user_state import MapState


class _Never:
    """No value is of this type: every value takes the full check."""


class _TypeCheck:
    """Refuses what cannot be of a declared type. A write is on the per-record path, so the
    writers test the common case inline (a value of the type's plain Python type: an int in
    range, a str...) and call ``full`` only for the rest."""

    __slots__ = ("_convert", "_name", "high", "low", "plain")

    plain: type[Any]
    low: float | None  # an int type's or FLOAT's bounds, both or neither
    high: float | None

    def __init__(self, name: str, type_info: Any, convert: Converter) -> None:
        self._name, self._convert = name, convert
        plain = plain_type(type_info)
        self.plain, self.low, self.high = plain if plain is not None else (_Never, None, None)

    def full(self, value: Any) -> None:
        try:
            self._convert(value)  # its result is not kept: a check (see the module docstring)
        except TypeError as e:
            raise TypeError(f"state {self._name!r}: {e}") from None


class _AnyValue(_TypeCheck):
    """A map state's key or value without a declared type."""

    def __init__(self) -> None:
        self.plain, self.low, self.high = object, None, None

    def full(self, value: Any) -> None:
        pass


def _check_of(name: str, type_info: Any) -> _TypeCheck | None:
    convert = value_converter(type_info) if type_info is not None else None
    return None if convert is None else _TypeCheck(name, type_info, convert)


# An int of one CPython digit (|value| < 2**30) compared with a one-digit literal, in a
# comparison that is not chained, takes the interpreter's fast path for small ints; against
# the 64-bit bounds of a LONG, held in a closure's cells, it takes the general one. So INT and
# LONG writes test the one-digit range first, and only a value beyond it (a timestamp in
# milliseconds, a count beyond a billion) the type's bounds. In the keyed count, typed LONG
# state went from 0.88 to about 1.0 of untyped; in-process, a wide value's write costs 20 ns
# more (docs/benchmarks.md, ``bench/typed_state_write.py``).
_ONE_DIGIT = 1073741823  # 2**30 - 1, as written out in the closures below


def _spans_one_digit(check: _TypeCheck) -> bool:
    """An int type whose bounds hold every one-digit int (INT, LONG; not BYTE, SHORT, or
    BIG_INT, which has none)."""
    low, high = check.low, check.high
    return (
        check.plain is int
        and low is not None
        and high is not None
        and low <= -_ONE_DIGIT
        and high >= _ONE_DIGIT
    )


def _checked(store: Callable[[Any], None], check: _TypeCheck) -> Callable[[Any], None]:
    """``store`` behind ``check``, as a closure rather than a method: the common case (a value
    of the plain type, in range) then costs one call and the test on local variables, no
    attribute lookups (a write is on the per-record path: about a sixth less than a method)."""
    plain, low, high, full = check.plain, check.low, check.high, check.full
    if low is None or high is None:

        def checked(value: Any) -> None:
            if type(value) is not plain:
                full(value)
            store(value)

    elif _spans_one_digit(check):

        def checked(value: Any) -> None:
            if type(value) is int and value >= -1073741823 and value <= 1073741823:
                store(value)
                return
            if type(value) is not int or not low <= value <= high:
                full(value)
            store(value)

    else:

        def checked(value: Any) -> None:
            if type(value) is not plain or not low <= value <= high:
                full(value)
            store(value)

    return checked


def _checked_into(
    data: dict[Any, Any], key_context: Any, store: Callable[[Any], None], check: _TypeCheck
) -> Callable[[Any], None]:
    """``_checked`` for a state that writes into ``data`` under ``key_context``'s key: a
    value of the plain type, in range, goes into ``data`` in this call, the rest through
    ``store`` (a None clears): about half of what the check costs on the heap."""
    plain, low, high, full = check.plain, check.low, check.high, check.full
    if low is None or high is None:

        def checked(value: Any) -> None:
            if type(value) is plain:
                data[key_context.key] = value
            else:
                full(value)
                store(value)

    elif _spans_one_digit(check):

        def checked(value: Any) -> None:
            if type(value) is int and value >= -1073741823 and value <= 1073741823:
                data[key_context.key] = value
                return
            if type(value) is int and low <= value <= high:
                data[key_context.key] = value
                return
            full(value)
            store(value)

    else:

        def checked(value: Any) -> None:
            if type(value) is plain and low <= value <= high:
                data[key_context.key] = value
            else:
                full(value)
                store(value)

    return checked


class TypedValueState:
    __slots__ = ("clear", "update", "value")

    def __init__(self, inner: Any, check: _TypeCheck) -> None:
        self.value, self.clear = inner.value, inner.clear
        direct_store = getattr(inner, "direct_store", None)
        if direct_store is None:
            self.update = _checked(inner.update, check)
        else:
            data, key_context = direct_store()
            self.update = _checked_into(data, key_context, inner.update, check)


class TypedListState:
    __slots__ = ("_check", "_inner", "add", "clear", "get")

    def __init__(self, inner: Any, check: _TypeCheck) -> None:
        self._inner, self._check = inner, check
        self.get, self.clear = inner.get, inner.clear
        self.add = _checked(inner.add, check)

    def update(self, values: Iterable[Any]) -> None:
        values = list(values)
        for value in values:
            self._check.full(value)
        self._inner.update(values)


class TypedMapState(MapState[Any, Any]):
    __slots__ = (
        "_inner", "_key", "_value",
        "clear", "contains", "get", "is_empty", "items", "keys", "remove", "values",
    )  # fmt: skip

    def __init__(self, inner: Any, key: _TypeCheck, value: _TypeCheck) -> None:
        self._inner, self._key, self._value = inner, key, value
        # reads are the backend's own methods, bound over MapState's (user_state.py)
        self.get, self.contains, self.remove = inner.get, inner.contains, inner.remove  # type: ignore[method-assign]
        self.items, self.keys, self.values = inner.items, inner.keys, inner.values  # type: ignore[method-assign]
        self.is_empty, self.clear = inner.is_empty, inner.clear  # type: ignore[method-assign]

    def put(self, key: Any, value: Any) -> None:
        c = self._key
        if type(key) is not c.plain or (c.low is not None and not c.low <= key <= c.high):
            c.full(key)
        c = self._value
        if type(value) is not c.plain or (c.low is not None and not c.low <= value <= c.high):
            c.full(value)
        self._inner.put(key, value)

    def put_all(self, mapping: dict[Any, Any]) -> None:
        for key, value in mapping.items():
            self._key.full(key)
            self._value.full(value)
        self._inner.put_all(mapping)


def typed(state: Any, descriptor: StateDescriptor) -> Any:
    """``state``, checking what is stored against ``descriptor``'s type; itself without one."""
    name = descriptor.name
    if descriptor.kind is StateKind.MAP:
        key_type, value_type = descriptor.type_info or (None, None)
        key, value = _check_of(name, key_type), _check_of(name, value_type)
        if key is None and value is None:
            return state
        return TypedMapState(state, key or _AnyValue(), value or _AnyValue())
    check = _check_of(name, descriptor.type_info)
    if check is None:
        return state
    kind = TypedValueState if descriptor.kind is StateKind.VALUE else TypedListState
    return kind(state, check)
