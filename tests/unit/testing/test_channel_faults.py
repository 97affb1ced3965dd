"""Cutting a connection between two slots: the output channel loses the frame it sends once a
cut is armed, once across every channel and process; the consumer meets the gap."""

from __future__ import annotations

import threading

import pytest

from barrierflow.protocol.frames import HEADER, ChannelSequenceError, Kind, check_sequence
from barrierflow.runtime.network import channel_faults
from barrierflow.runtime.network.output import OutputChannel
from barrierflow.testing import channel_faults as cuts_facility
from barrierflow.testing.in_memory_network import InMemorySocket


@pytest.fixture
def cuts(tmp_path, monkeypatch):
    monkeypatch.setattr(cuts_facility, "CHECK_EVERY_S", 0.0)
    installed = cuts_facility.install(str(tmp_path / "cuts"))
    yield installed
    channel_faults.install(None)


def _channel(cuts) -> tuple[OutputChannel, InMemorySocket]:
    socket = InMemorySocket("output", threading.Condition())
    return OutputChannel(socket, 9, 0, cuts, "sums (1/2)"), socket


def _sequences(socket: InMemorySocket) -> list[int]:
    return [HEADER.unpack(frames[0])[3] for frames in socket.take_sent()]


def test_an_armed_cut_loses_one_frame_and_the_consumer_sees_the_gap(cuts):
    out, socket = _channel(cuts)
    out.send_event(Kind.BARRIER, b"1")
    cuts.arm()
    out.send_event(Kind.BARRIER, b"2")  # lost with the connection
    out.send_event(Kind.BARRIER, b"3")

    sequences = _sequences(socket)
    assert sequences == [0, 1, 3]  # HELLO, the first barrier, the third
    with pytest.raises(ChannelSequenceError):
        for expected, got in enumerate(sequences):
            check_sequence(expected, got, "input channel 0")
    (fired,) = cuts.fired()
    assert fired["producer"] == "sums (1/2)" and fired["channel"] == 0


def test_a_cut_fires_once_for_every_channel_that_could_take_it(cuts):
    first, first_socket = _channel(cuts)
    second, second_socket = _channel(cuts)
    cuts.arm()
    first.send_event(Kind.BARRIER, b"a")
    second.send_event(Kind.BARRIER, b"b")

    assert _sequences(first_socket) == [0] and _sequences(second_socket) == [0, 1]
    assert len(cuts.fired()) == 1


def test_the_hook_is_handed_to_the_jobs_planned_while_it_is_installed(cuts):
    assert channel_faults.installed() == cuts
    channel_faults.install(None)
    assert channel_faults.installed() is None
