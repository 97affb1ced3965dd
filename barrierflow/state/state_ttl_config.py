"""PyFlink's ``StateTtlConfig``: how long a state value lives after it was last written (or
read), in processing time, as Flink does. Performs no I/O."""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace

from barrierflow.eventtime.durations import Time, millis_of


class UpdateType(enum.Enum):
    Disabled = 0
    OnCreateAndWrite = 1  # a write starts the value's time to live again
    OnReadAndWrite = 2  # and so does a read


class StateVisibility(enum.Enum):
    ReturnExpiredIfNotCleanedUp = 0
    NeverReturnExpired = 1


class TtlTimeCharacteristic(enum.Enum):
    ProcessingTime = 0


@dataclass(frozen=True)
class StateTtlConfig:
    ttl_ms: int
    update_type: UpdateType = UpdateType.OnCreateAndWrite
    state_visibility: StateVisibility = StateVisibility.NeverReturnExpired

    UpdateType = UpdateType
    StateVisibility = StateVisibility
    TtlTimeCharacteristic = TtlTimeCharacteristic

    @staticmethod
    def new_builder(ttl: Time) -> StateTtlConfig.Builder:
        return StateTtlConfig.Builder(ttl)

    class Builder:
        def __init__(self, ttl: Time) -> None:
            ttl_ms = millis_of(ttl, "StateTtlConfig.new_builder")
            if ttl_ms <= 0:
                raise ValueError(f"a state's time to live must be positive, not {ttl_ms} ms")
            self._config = StateTtlConfig(ttl_ms)

        def set_update_type(self, update_type: UpdateType) -> StateTtlConfig.Builder:
            if not isinstance(update_type, UpdateType) or update_type is UpdateType.Disabled:
                raise ValueError(
                    "set_update_type takes StateTtlConfig.UpdateType.OnCreateAndWrite or "
                    f"OnReadAndWrite, not {update_type!r}"
                )
            self._config = replace(self._config, update_type=update_type)
            return self

        def update_ttl_on_create_and_write(self) -> StateTtlConfig.Builder:
            return self.set_update_type(UpdateType.OnCreateAndWrite)

        def update_ttl_on_read_and_write(self) -> StateTtlConfig.Builder:
            return self.set_update_type(UpdateType.OnReadAndWrite)

        def set_state_visibility(self, visibility: StateVisibility) -> StateTtlConfig.Builder:
            if not isinstance(visibility, StateVisibility):
                raise ValueError(
                    f"set_state_visibility takes a StateVisibility, not {visibility!r}"
                )
            self._config = replace(self._config, state_visibility=visibility)
            return self

        def return_expired_if_not_cleaned_up(self) -> StateTtlConfig.Builder:
            return self.set_state_visibility(StateVisibility.ReturnExpiredIfNotCleanedUp)

        def never_return_expired(self) -> StateTtlConfig.Builder:
            return self.set_state_visibility(StateVisibility.NeverReturnExpired)

        def set_ttl_time_characteristic(
            self, characteristic: TtlTimeCharacteristic
        ) -> StateTtlConfig.Builder:
            if characteristic is not TtlTimeCharacteristic.ProcessingTime:
                raise ValueError("state TTL is in processing time only (as in Flink)")
            return self

        # Cleanup strategies: expired values are removed when they are read (see ttl_state.py);
        # these are accepted for PyFlink programs and change nothing.
        def cleanup_full_snapshot(self) -> StateTtlConfig.Builder:
            return self

        def cleanup_incrementally(self, *args: object) -> StateTtlConfig.Builder:
            return self

        def cleanup_in_rocksdb_compact_filter(self, *args: object) -> StateTtlConfig.Builder:
            return self

        def disable_cleanup_in_background(self) -> StateTtlConfig.Builder:
            return self

        def build(self) -> StateTtlConfig:
            return self._config
