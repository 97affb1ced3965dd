"""The producer side of the network: result partitions and their credit-based channels.

Records are partitioned into per-channel lists; a list becomes a buffer (one frame, encoded by
the edge's ``BufferEncoder``: MessagePack for a declared type, else pickle) when it holds
``buffer_size`` records or when the task flushes it (buffer timeout, barrier). A batch with a
timestamp column (``emit`` takes a ``RecordBatch``) keeps it in a parallel list per channel,
encoded with the records; a partition that saw one timestamped batch stays timestamped (later
records without a timestamp get ``NO_TIMESTAMP``), so that one buffer never mixes the two
kinds. A buffer
is sent only against a credit the consumer granted; without credit it waits in the channel's
backlog, in order, with the events queued behind it. The task takes no new input while any
channel has a backlog, which is how a slow consumer back-pressures the sources. With buffer
debloating a consumer also announces how many records a buffer to it should hold (fewer when
it is slow: docs/adr/0029-buffer-debloating.md); each channel fills its buffers to its
consumer's size, read with the credits.

A priority event (the barrier of an unaligned checkpoint) overtakes the backlog: it is sent at
once, and the buffers it overtook, which follow it, are returned to be stored as channel state.
A barrier queued with a deadline (aligned with a timeout) becomes one once its deadline passed.

**Threading:** task thread only (zmq sockets belong to the thread that uses them).
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Callable
from itertools import compress
from typing import Any, cast

import zmq

from barrierflow.datastream.output_tag import SideOutput
from barrierflow.eventtime.timestamps import NO_TIMESTAMP
from barrierflow.graph.timestamp_use import TimestampColumn
from barrierflow.graph.transformation import PartitionerSpec, Partitioning
from barrierflow.protocol.buffer_codec import BufferEncoder
from barrierflow.protocol.frames import BUFFER_SIZE, CREDIT, HEADER, Kind, check_sequence
from barrierflow.protocol.key_group_range import subtask_for_key_group
from barrierflow.protocol.record_batch import RecordBatch
from barrierflow.runtime.network.channel_faults import ChannelFaultHook
from barrierflow.state.key_groups import KeyGroupCache, assign_to_key_group, unwrapped


class ConsumerGoneError(Exception):
    """A send timed out: the consumer's input gate is closed."""


class RecordRoutingError(Exception):
    """A record the partitioner could not route (its key selector failed)."""


class ChannelOfKey(dict[Any, int]):
    """key -> output channel, memoized for the per-record path: a key seen before is one
    lookup in C (``__getitem__``), a new one is hashed to its key group. Bounded: cleared at
    ``capacity`` keys. A key that is not hashable raises ``TypeError``, one without a stable
    hash ``UnhashableKeyError`` (a list is made a key by the caller)."""

    __slots__ = ("_capacity", "_channel_of_key_group")

    def __init__(self, channel_of_key_group: list[int], capacity: int = 1 << 20) -> None:
        """``channel_of_key_group``: the channel of each key group (max parallelism many)."""
        super().__init__()
        self._channel_of_key_group = channel_of_key_group
        self._capacity = capacity

    def __missing__(self, key: Any) -> int:
        of_group = self._channel_of_key_group
        channel = of_group[assign_to_key_group(key, len(of_group))]
        if len(self) >= self._capacity:
            self.clear()
        self[key] = channel
        return channel


class OutputChannel:
    """One channel to one consumer. ``socket``: connected to the consumer's input gate
    (``TaskNetwork.output``); the channel says HELLO on it at once, to be granted credit."""

    __slots__ = (
        "_backlog",
        "_channel",
        "_credit",
        "_credits_seen",
        "_fault",
        "_sent",
        "_timed",
        "_token",
        "announced_size",
        "name",
        "socket",
    )

    def __init__(
        self,
        socket: zmq.Socket,
        token: int,
        channel: int,
        fault: ChannelFaultHook | None = None,
        name: str = "",
    ) -> None:
        """``fault``: a test's hook that may cut this channel's connection (``channel_faults``);
        ``name``: the producing subtask's, for the hook."""
        self.socket = socket
        self.name = name
        self._fault = fault
        self._token = token
        self._channel = channel
        self._sent = 0  # sequence number of the next frame sent
        self._credits_seen = 0  # sequence number of the next credit or size frame expected
        self._credit = 0
        self.announced_size: int | None = None  # records per buffer, if the consumer said
        self._backlog: deque[tuple[Kind, bytes | None]] = deque()
        self._timed: list[tuple[int, bytes]] = []  # (deadline ns, payload) of queued barriers
        self._send(Kind.HELLO, None)

    @property
    def backlogged(self) -> bool:
        return bool(self._backlog)

    def send_buffer(self, payload: bytes) -> None:
        if self._backlog or self._credit <= 0:
            self._backlog.append((Kind.BUFFER, payload))
        else:
            self._credit -= 1
            self._send(Kind.BUFFER, payload)

    def send_event(
        self, kind: Kind, payload: bytes | None = None, deadline_ns: int | None = None
    ) -> None:
        """Behind the backlog; ``deadline_ns``: a barrier that overtakes it after that time."""
        if self._backlog:
            self._backlog.append((kind, payload))
            if deadline_ns is not None:
                assert payload is not None  # a barrier's frame has its body
                self._timed.append((deadline_ns, payload))
        else:
            self._send(kind, payload)

    def send_priority_event(self, kind: Kind, payload: bytes) -> list[bytes]:
        """Sends at once, ahead of the backlog; returns the buffers it overtook, in order."""
        self._send(kind, payload)
        return [p for k, p in self._backlog if k == Kind.BUFFER and p is not None]

    def holds(self, payload: bytes) -> bool:
        """Whether this event still waits in the backlog."""
        return any(p is payload for _, p in self._backlog)

    def promote_overdue(self, now_ns: int) -> list[tuple[bytes, list[bytes]]]:
        """Sends, ahead of the backlog, each queued barrier whose deadline passed; returns each
        with the buffers it overtook."""
        promoted: list[tuple[bytes, list[bytes]]] = []
        for entry in list(self._timed):
            deadline_ns, payload = entry
            at = next((i for i, (_, p) in enumerate(self._backlog) if p is payload), None)
            if at is None:  # sent in its turn
                self._timed.remove(entry)
            elif now_ns > deadline_ns:
                backlog = list(self._backlog)[:at]
                overtaken = [p for k, p in backlog if k == Kind.BUFFER and p is not None]
                del self._backlog[at]
                self._send(Kind.PRIORITY_BARRIER, payload)
                self._timed.remove(entry)
                promoted.append((payload, overtaken))
        return promoted

    def _send(self, kind: Kind, payload: bytes | None) -> None:
        head = HEADER.pack(self._token, kind, self._channel, self._sent)
        self._sent += 1
        if self._fault is not None and self._fault.cut(self.name, self._channel):
            return  # lost with the connection the hook cut; the consumer sees the gap
        try:
            if payload is None:
                self.socket.send(head)
            else:
                self.socket.send_multipart((head, payload), copy=len(payload) < 4096)
        except zmq.Again:  # the socket's send timeout: the consumer closed its input gate
            raise ConsumerGoneError(
                f"output channel {self._channel}: the consumer takes no more frames (it "
                "stopped: canceled, or failed on its side)"
            ) from None

    def receive_credits(self) -> None:
        """Takes the credits that arrived and sends what the backlog may now send."""
        sock = self.socket
        while cast(int, sock.getsockopt(zmq.EVENTS)) & zmq.POLLIN:  # an int option
            frames = sock.recv_multipart()
            token, kind, _, sequence = HEADER.unpack(frames[0])
            if token != self._token or kind not in (Kind.CREDIT, Kind.BUFFER_SIZE):
                continue
            check_sequence(
                self._credits_seen, sequence, f"credit for output channel {self._channel}"
            )
            self._credits_seen += 1
            if kind == Kind.CREDIT:
                self._credit += CREDIT.unpack(frames[1])[0]
            else:
                self.announced_size = max(1, BUFFER_SIZE.unpack(frames[1])[0])
        backlog = self._backlog
        while backlog and (backlog[0][0] != Kind.BUFFER or self._credit > 0):
            kind, payload = backlog.popleft()
            if kind == Kind.BUFFER:
                self._credit -= 1
            self._send(kind, payload)

    def close(self, linger_ms: int | None = None) -> None:
        """``linger_ms``: how long what is still queued may take to go out (None: the
        socket's own setting)."""
        self.socket.close(linger=linger_ms)


class ResultPartition:
    """The output of one subtask on one job edge, partitioned over the edge's consumers."""

    def __init__(
        self,
        partitioner: PartitionerSpec,
        channels: list[OutputChannel],
        buffer_size: int,
        max_parallelism: int,
        describe_operator: str,
        drop_side_outputs: bool = False,
        encoder: BufferEncoder | None = None,
        timestamps: TimestampColumn = TimestampColumn.NEEDED,
    ) -> None:
        """``drop_side_outputs``: the producer emits side output records (another of its edges
        takes them), which this edge, not a side output's, leaves out. ``encoder``: how a
        buffer becomes bytes (by the records' declared type; pickle without one).
        ``timestamps``: DROPPED where the consumer reads none (``graph/timestamp_use.py``):
        the edge leaves the column out."""
        self.channels = channels
        self._encode = (encoder or BufferEncoder(None)).encode
        self._buffer_size = buffer_size
        # Per channel, the records a buffer holds: the configured size, or, with debloating,
        # what the consumer announced (never more than the configured size).
        self._sizes = [buffer_size] * len(channels)
        self.smallest_size = buffer_size  # of the channels': what one input step should add
        self._pending: list[list[Any]] = [[] for _ in channels]
        self._pending_ts: list[list[int]] | None = None  # per channel, once timestamped
        self._drops_timestamps = timestamps is TimestampColumn.DROPPED
        self._describe = describe_operator
        self._rotation = 0
        self._route: Callable[[list[Any], list[int] | None], None]
        kind = partitioner.kind
        if kind is Partitioning.FORWARD or len(channels) == 1:
            self._route = self._route_forward
        elif kind in (Partitioning.REBALANCE, Partitioning.RESCALE):
            self._route = self._route_rebalance  # rescale: over this producer's share
        elif kind is Partitioning.BROADCAST:
            self._route = self._route_broadcast
        elif kind in (Partitioning.SHUFFLE, Partitioning.CUSTOM):
            if kind is Partitioning.SHUFFLE:
                draw, n = random.Random().randrange, len(channels)
                self._channel_of = lambda _record: draw(n)
            else:
                self._channel_of = self._custom_channel(partitioner)
            self._route = self._route_routed
        else:
            select = partitioner.key_selector
            assert select is not None  # a key_by edge has its key selector
            self._key_selector = unwrapped(select)  # the key groups key its lists
            self._key_groups = KeyGroupCache(max_parallelism)
            n = len(channels)
            self._channel_of_key_group = [
                subtask_for_key_group(max_parallelism, n, kg) for kg in range(max_parallelism)
            ]
            self._channel_of_key = ChannelOfKey(self._channel_of_key_group).__getitem__
            self._route = self._route_by_key_group
        self._side_output = partitioner.side_output
        self._selects = self._side_output is not None or drop_side_outputs

    def emit(self, batch: RecordBatch) -> None:
        """Partitions ``batch`` over the channels. Once a batch came with timestamps, every
        buffer of this partition carries them (records without get ``NO_TIMESTAMP``)."""
        if self._selects:
            batch = self._selected(batch)
        self._route(batch.values, self._timestamps(batch))

    def emit_restored(self, batch: RecordBatch, channels: list[int] | None = None) -> None:
        """Records of a restored buffer of this edge (an unaligned checkpoint's output channel
        state): selected for the edge when first emitted, so not selected again; routed by the
        partitioner, or to ``channels`` alone (a broadcast edge's records that some consumers
        had not received)."""
        timestamps = self._timestamps(batch)
        if channels is None:
            self._route(batch.values, timestamps)
            return
        for c in channels:
            self._pending[c].extend(batch.values)
            if timestamps is not None:
                assert self._pending_ts is not None  # made with the first timestamps
                self._pending_ts[c].extend(timestamps)
        self._flush_full()

    def _timestamps(self, batch: RecordBatch) -> list[int] | None:
        """The batch's timestamp column as this partition carries it: none until a batch came
        with one, then one for every record; none where the edge drops the column."""
        timestamps = batch.timestamps
        if self._drops_timestamps:
            return None
        if self._pending_ts is not None:
            if timestamps is None:
                timestamps = [NO_TIMESTAMP] * len(batch.values)
        elif timestamps is not None:
            # From now on every buffer carries timestamps: what is pending gets none.
            self._pending_ts = [[NO_TIMESTAMP] * len(p) for p in self._pending]
        return timestamps

    def _selected(self, batch: RecordBatch) -> RecordBatch:
        """This edge's records: its side output's values, or the records that are none."""
        tag = self._side_output
        records = batch.values
        if tag is None:
            return batch.compress([type(r) is not SideOutput for r in records])
        flags = [type(r) is SideOutput and r.tag == tag for r in records]
        ts = batch.timestamps
        return RecordBatch(
            [r.value for r in compress(records, flags)],
            None if ts is None else list(compress(ts, flags)),
        )

    # --- partitioning ----------------------------------------------------------------------
    # Each router takes the records and their timestamps (None: the stream has no event time).
    # The two that route record by record keep a loop without the column: carrying it costs
    # even a job without event time some 15 ns a record in a shared loop (docs/adr/0015).

    def _route_forward(self, records: list[Any], timestamps: list[int] | None) -> None:
        pending = self._pending[0]
        pending.extend(records)
        if timestamps is not None:
            assert self._pending_ts is not None  # made with the first timestamps
            self._pending_ts[0].extend(timestamps)
        if len(pending) >= self._sizes[0]:
            self._flush_channel(0)

    def _route_rebalance(self, records: list[Any], timestamps: list[int] | None) -> None:
        n = len(self.channels)
        start = self._rotation
        pending_ts = self._pending_ts  # made with the first timestamps
        for j in range(n):
            self._pending[(start + j) % n].extend(records[j::n])
            if timestamps is not None:
                assert pending_ts is not None
                pending_ts[(start + j) % n].extend(timestamps[j::n])
        self._rotation = (start + len(records)) % n
        self._flush_full()

    def _route_broadcast(self, records: list[Any], timestamps: list[int] | None) -> None:
        pending_ts = self._pending_ts  # made with the first timestamps
        for i, pending in enumerate(self._pending):
            pending.extend(records)
            if timestamps is not None:
                assert pending_ts is not None
                pending_ts[i].extend(timestamps)
        self._flush_full()

    def _custom_channel(self, partitioner: PartitionerSpec) -> Callable[[Any], int]:
        select, partition, n = partitioner.key_selector, partitioner.partition, len(self.channels)
        assert select is not None and partition is not None  # partition_custom gave both

        def channel_of(record: Any) -> int:
            channel = partition(select(record), n)
            if type(channel) is not int or not 0 <= channel < n:
                raise ValueError(
                    f"the partitioner returned {channel!r} for key {select(record)!r:.100}; "
                    f"it must return a partition from 0 to {n - 1}"
                )
            return channel

        return channel_of

    def _route_routed(self, records: list[Any], timestamps: list[int] | None) -> None:
        channel_of = self._channel_of
        pending = self._pending
        record = None
        try:
            if timestamps is None:
                for record in records:
                    pending[channel_of(record)].append(record)
            else:
                pending_ts = self._pending_ts
                assert pending_ts is not None  # made with the first timestamps
                for record, timestamp in zip(records, timestamps, strict=True):
                    channel = channel_of(record)
                    pending[channel].append(record)
                    pending_ts[channel].append(timestamp)
        except Exception as e:
            raise self._routing_failed(record, e) from e
        self._flush_full()

    def _routing_failed(self, record: Any, error: Exception) -> RecordRoutingError:
        return RecordRoutingError(
            f"partitioning before {self._describe} failed on record {record!r:.200}: "
            f"{type(error).__name__}: {error}"
        )

    def _route_by_key_group(self, records: list[Any], timestamps: list[int] | None) -> None:
        """Each record to the channel of its key's key group. The loop looks each key up in a
        dict at C speed (``ChannelOfKey``); from a record it cannot route that way (a list
        key, a key or selector that fails) on, the records go one by one through the key
        group cache, which keys a list and names what failed (and memoizes only what goes
        that way: list keys)."""
        select = self._key_selector
        channel_of = self._channel_of_key
        pending = self._pending  # pending[c].append: faster than calling stored bound methods
        routed = sum(map(len, pending))
        try:
            if timestamps is None:
                for record in records:
                    pending[channel_of(select(record))].append(record)
            else:
                pending_ts = self._pending_ts
                assert pending_ts is not None  # made with the first timestamps
                for record, timestamp in zip(records, timestamps, strict=True):
                    channel = channel_of(select(record))
                    pending[channel].append(record)
                    pending_ts[channel].append(timestamp)
        except Exception:  # noqa: BLE001 - the records from this one on, one by one
            self._route_one_by_one(records, timestamps, sum(map(len, pending)) - routed)
        self._flush_full()

    def _route_one_by_one(
        self, records: list[Any], timestamps: list[int] | None, start: int
    ) -> None:
        """``records[start:]`` by key group, a list key keyed as its ``KeyList``; a record
        whose key cannot be routed fails the task, named."""
        select, key_group = self._key_selector, self._key_groups.key_group
        channel_of = self._channel_of_key_group
        pending, pending_ts = self._pending, self._pending_ts
        for i in range(start, len(records)):
            record = records[i]
            try:
                channel = channel_of[key_group(select(record))]
            except Exception as e:
                raise RecordRoutingError(
                    f"key_by() before {self._describe} failed on record {record!r:.200}: "
                    f"{type(e).__name__}: {e}"
                ) from e
            pending[channel].append(record)
            if timestamps is not None:
                assert pending_ts is not None  # made with the first timestamps
                pending_ts[channel].append(timestamps[i])

    def _flush_full(self) -> None:
        sizes = self._sizes
        for i, pending in enumerate(self._pending):
            if len(pending) >= sizes[i]:
                self._flush_channel(i)

    # --- buffers and events ----------------------------------------------------------------

    def _flush_channel(self, channel: int) -> None:
        pending = self._pending[channel]
        size = self._sizes[channel]
        if size < self._buffer_size and len(pending) > size:
            self._flush_in_parts(channel, size)
            return
        if self._pending_ts is None:
            self.channels[channel].send_buffer(self._encode(RecordBatch(pending)))
        else:
            timestamps = self._pending_ts[channel]
            self.channels[channel].send_buffer(self._encode(RecordBatch(pending, timestamps)))
            timestamps.clear()
        pending.clear()

    def _flush_in_parts(self, channel: int, size: int) -> None:
        """More records wait for a debloated channel than its consumer asked a buffer to
        hold: they go in buffers of that size, each against a credit, so that credits still
        bound what is in flight (the rest waits in the backlog, and the task takes no input)."""
        pending = self._pending[channel]
        timestamps = None if self._pending_ts is None else self._pending_ts[channel]
        send = self.channels[channel].send_buffer
        for start in range(0, len(pending), size):
            part = None if timestamps is None else timestamps[start : start + size]
            send(self._encode(RecordBatch(pending[start : start + size], part)))
        pending.clear()
        if timestamps is not None:
            timestamps.clear()

    def flush(self) -> None:
        for i, pending in enumerate(self._pending):
            if pending:
                self._flush_channel(i)

    def broadcast_event(
        self, kind: Kind, payload: bytes | None = None, deadline_ns: int | None = None
    ) -> None:
        """Sends an event on every channel behind all records emitted so far."""
        self.flush()
        for channel in self.channels:
            channel.send_event(kind, payload, deadline_ns)

    def broadcast_priority_event(self, kind: Kind, payload: bytes) -> list[list[bytes]]:
        """Sends an event on every channel ahead of what is queued (the records emitted so far
        flushed first); returns, per channel, the buffers it overtook."""
        self.flush()
        return [channel.send_priority_event(kind, payload) for channel in self.channels]

    def promote_overdue(self, now_ns: int) -> list[tuple[int, bytes, list[bytes]]]:
        """(channel index, barrier payload, overtaken buffers) of each barrier promoted."""
        return [
            (i, payload, overtaken)
            for i, channel in enumerate(self.channels)
            for payload, overtaken in channel.promote_overdue(now_ns)
        ]

    def holds(self, payload: bytes) -> bool:
        return any(channel.holds(payload) for channel in self.channels)

    @property
    def backlogged(self) -> bool:
        return any(c.backlogged for c in self.channels)

    def receive_credits(self) -> None:
        """Takes the credits (and buffer sizes) that arrived; sends what they allow."""
        sizes = self._sizes
        for i, channel in enumerate(self.channels):
            channel.receive_credits()
            announced = channel.announced_size
            if announced is not None and announced != sizes[i]:
                sizes[i] = min(announced, self._buffer_size)
                self.smallest_size = min(sizes)

    def close(self, linger_ms: int | None = None) -> None:
        for channel in self.channels:
            channel.close(linger_ms)
