"""TaskExecutor: runs the subtasks of one slot (one Spark barrier task) until they end.

Steps: bind the input gates of this slot's subtasks; register with the JobMaster, telling it
their endpoints; wait until it sends the endpoints of every slot's gates (once all slots
registered); start one thread per subtask; then watch: heartbeats to and from the JobMaster,
cancellation, the subtask threads. The slot's heartbeats carry its subtasks' metrics
(``TaskIOMetrics``): the JobMaster's REST API and Prometheus metrics see them every
``HEARTBEAT_INTERVAL_S``.

A slot stops itself when the JobMaster cancels the attempt or falls silent for
``heartbeat_timeout_s``: Spark does not promptly kill a busy Python worker of a failed barrier
stage, and a restarted job must not meet its own ghosts. A subtask that ignores cancellation
(stuck in user code) is ended with the whole process after ``cancel_grace_s``. When the job
ends with the attempt (``CancelAttempt.job_ended``), the slot removes the local state its
subtasks kept for a restart: on a cluster no one else can reach the executors' disks.

**Threading:** ``run_slot`` on the Spark task's thread; one thread per subtask.
"""

from __future__ import annotations

import contextlib
import os
import socket
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import zmq

from barrierflow.checkpoint import file_systems
from barrierflow.control import messages as msg
from barrierflow.runtime.network.input_gate import InputGate, bind_gate_socket
from barrierflow.runtime.task import StreamTask
from barrierflow.runtime.task_descriptor import TaskDescriptor
from barrierflow.runtime.task_network import ZmqTaskNetwork
from barrierflow.state.backends import local_state_name, remove_local_state

HEARTBEAT_INTERVAL_S = 0.5


@dataclass(frozen=True)
class SlotDescriptor:
    slot: int
    attempt: int
    jobmaster_endpoint: str
    bind_host: str | None  # None: this host's address (executors of a cluster)
    tasks: tuple[TaskDescriptor, ...]
    heartbeat_timeout_s: float = 10.0
    cancel_grace_s: float = 5.0


class SlotFailure(RuntimeError):
    """A subtask of this slot failed; the JobMaster has the details."""


def _gate_name(attempt: int, token: int, vertex: str, subtask: int) -> str:
    return f"gate-{attempt}-{token:x}-{vertex}-{subtask}"


def run_slot(slot: SlotDescriptor) -> str:
    if slot.tasks:  # as Flink's TaskManager: file systems first, with the job's settings
        file_systems.initialize(slot.tasks[0].config.file_systems)
    bind_host = slot.bind_host or socket.gethostbyname(socket.gethostname())
    context = zmq.Context()
    control = context.socket(zmq.DEALER)
    control.setsockopt(zmq.IDENTITY, msg.slot_identity(slot.attempt, slot.slot))
    control.setsockopt(zmq.LINGER, 1000)
    control.connect(slot.jobmaster_endpoint)
    pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix=f"snapshot-slot{slot.slot}")
    tasks: list[StreamTask] = []
    cancel: msg.CancelAttempt | None = None
    gates: dict[tuple[str, int], InputGate] = {}
    try:
        local: dict[str, str] = {}
        inproc: dict[tuple[str, int], str] = {}
        for descriptor in slot.tasks:
            if descriptor.num_input_channels == 0:
                continue
            socket_, tcp, in_proc = bind_gate_socket(
                context,
                bind_host,
                _gate_name(
                    descriptor.attempt, descriptor.token, descriptor.vertex, descriptor.subtask
                ),
            )
            gate = InputGate(
                socket_,
                descriptor.num_input_channels,
                descriptor.token,
                descriptor.config.initial_credit,
            )
            gates[(descriptor.vertex, descriptor.subtask)] = gate
            local[f"{descriptor.vertex}/{descriptor.subtask}"] = tcp
            inproc[(descriptor.vertex, descriptor.subtask)] = in_proc
        registered = msg.SlotRegistered(
            slot.attempt, slot.slot, socket.gethostname(), os.getpid(), gates=local
        )
        control.send(msg.encode(registered))
        answer = _await_gate_endpoints(slot, control)
        if not isinstance(answer, msg.GateEndpoints):
            cancel = answer
            return f"slot {slot.slot} stopped before it started"
        endpoint_of: dict[tuple[str, int], str] = {}
        for key, endpoint in answer.gates.items():
            vertex, subtask = key.rsplit("/", 1)
            endpoint_of[(vertex, int(subtask))] = endpoint
        endpoint_of.update(inproc)  # same process: no TCP
        network = ZmqTaskNetwork(context, slot.jobmaster_endpoint, endpoint_of)
        for descriptor in slot.tasks:
            task = StreamTask(
                descriptor, network, gates.get((descriptor.vertex, descriptor.subtask)), pool
            )
            tasks.append(task)
            task.start()
        cancel = _watch(slot, control, tasks)
    finally:
        for task in tasks:
            task.cancel()
        _join_or_exit(tasks, slot.cancel_grace_s)
        if cancel is not None and cancel.job_ended and slot.tasks:
            descriptor = slot.tasks[0]
            names = [local_state_name(op.uid, t.subtask) for t in slot.tasks for op in t.chain]
            remove_local_state(descriptor.config.state_backend, descriptor.job_id, names)
        # Only now that every subtask stopped: a producer of this slot sending to a consumer
        # of this slot that stopped first would otherwise block in send (inproc, peer gone)
        # for the send timeout, and hold the whole slot, and so the next attempt, that long.
        for gate in gates.values():
            gate.close()
        pool.shutdown(wait=True, cancel_futures=True)
        with contextlib.suppress(zmq.ZMQError):
            control.send(msg.encode(msg.SlotStopped(slot.attempt, slot.slot)), zmq.NOBLOCK)
        control.close()
        context.term()
    failed = [t for t in tasks if t.error is not None]
    if failed:
        raise SlotFailure(f"subtask {failed[0].name} failed: {failed[0].error}")
    return f"slot {slot.slot} finished"


def _await_gate_endpoints(
    slot: SlotDescriptor, control: zmq.Socket
) -> msg.GateEndpoints | msg.CancelAttempt | None:
    """Until the JobMaster sends every gate's endpoint (all slots registered), cancels the
    attempt, or goes silent (None). The JobMaster, not Spark's ``allGather``, brings the slots
    together: Spark answers a barrier call by polling once a second, a second lost on every
    start (docs/adr/0023-gate-endpoints-through-the-job-master.md)."""
    last_heard = time.monotonic()
    while time.monotonic() - last_heard <= slot.heartbeat_timeout_s:
        if not control.poll(100):
            continue
        message = msg.decode(control.recv())
        last_heard = time.monotonic()
        if message.attempt != slot.attempt:
            continue
        if isinstance(message, msg.GateEndpoints | msg.CancelAttempt):
            return message
    return None  # the JobMaster is gone: stop rather than wait as a ghost


def _watch(
    slot: SlotDescriptor, control: zmq.Socket, tasks: list[StreamTask]
) -> msg.CancelAttempt | None:
    """Until the tasks ended, one failed, or the JobMaster canceled the attempt (returned)
    or went silent."""
    last_heard = time.monotonic()
    next_heartbeat = 0.0
    while any(t.thread.is_alive() for t in tasks):
        now = time.monotonic()
        if now >= next_heartbeat:
            metrics = [m for m in (t.metrics.sample() for t in tasks) if m is not None]
            control.send(msg.encode(msg.SlotHeartbeat(slot.attempt, slot.slot, metrics)))
            next_heartbeat = now + HEARTBEAT_INTERVAL_S
        if control.poll(100):
            message = msg.decode(control.recv())
            last_heard = time.monotonic()
            if isinstance(message, msg.CancelAttempt) and message.attempt == slot.attempt:
                return message
        elif time.monotonic() - last_heard > slot.heartbeat_timeout_s:
            return None  # the JobMaster is gone: stop rather than run as a ghost
        if any(t.error is not None for t in tasks):
            return None
    return None


def _join_or_exit(tasks: list[StreamTask], grace_s: float) -> None:
    deadline = time.monotonic() + grace_s
    for task in tasks:
        task.thread.join(max(0.0, deadline - time.monotonic()))
    if any(t.thread.is_alive() for t in tasks):
        # A subtask stuck in user code cannot be interrupted; the process must go.
        os._exit(70)
