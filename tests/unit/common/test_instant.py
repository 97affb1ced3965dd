"""PyFlink's Instant: seconds and nanoseconds, to and from epoch milliseconds as Java's."""

from barrierflow.common import Instant


def test_an_instant_round_trips_through_epoch_milliseconds():
    for millis in (0, 1, 999, 1_000, 1_700_000_000_123, -1, -1_001):
        assert Instant.of_epoch_milli(millis).to_epoch_milli() == millis


def test_an_instant_before_the_epoch_keeps_its_nanoseconds_positive():
    assert Instant.of_epoch_milli(-1) == Instant(-1, 999_000_000)
    assert repr(Instant(5, 7)) == "Instant<5, 7>"
