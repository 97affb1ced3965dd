"""The channel layer's fault hook, a test facility: a data connection between two slots cut.

A cut connection loses the frames in flight on it; zmq reconnects silently and the channel
goes on, so the consumer meets a gap in the channel's sequence numbers and fails the attempt
(``protocol/frames.check_sequence``). A hook makes an output channel to another slot lose the
frame it is sending, as such a cut would. Only a test installs one
(``barrierflow.testing.channel_faults``): ``install`` in the process that plans the job, which
hands it to every task in ``TaskConfig.channel_faults``; no configuration key turns it on.

**Threading:** ``install`` before the job is planned; a hook's ``cut`` from task threads.
"""

from __future__ import annotations

from typing import Protocol


class ChannelFaultHook(Protocol):
    """Decides, per frame an output channel to another slot sends, whether its connection is
    cut now. It must pickle (it rides to the executors) and cost little: it is asked for
    every frame (``OutputChannel._send``)."""

    def cut(self, producer: str, channel: int) -> bool:
        """``producer``: the sending subtask's name; ``channel``: its channel index."""


_installed: ChannelFaultHook | None = None


def install(hook: ChannelFaultHook | None) -> None:
    """The jobs this process plans from now on give ``hook`` to their tasks (None: none)."""
    global _installed
    _installed = hook


def installed() -> ChannelFaultHook | None:
    return _installed
