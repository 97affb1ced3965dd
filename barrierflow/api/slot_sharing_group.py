"""PyFlink's ``SlotSharingGroup`` and ``MemorySize``: a named group of operators and the
resources its slots ask for.

A barrierflow job runs every subtask in the job's own slots, the tasks of one Spark barrier
stage (a slot per task): operators always share them, and a slot's resources are what Spark
gives its task (``spark.task.cpus``, executor memory). So the group's name is recorded, and
resources asked for are not applied: ``DataStream.slot_sharing_group`` logs that, once per
group, rather than dropping them silently. Performs no I/O.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace

from barrierflow.errors import ConfigurationError

log = logging.getLogger("barrierflow")

_MEBI = 1 << 20


@dataclass(frozen=True, order=True)
class MemorySize:
    bytes_size: int

    @staticmethod
    def of_mebi_bytes(mebi_bytes: int) -> MemorySize:
        return MemorySize(mebi_bytes * _MEBI)

    def get_bytes(self) -> int:
        return self.bytes_size

    def get_kibi_bytes(self) -> int:
        return self.bytes_size >> 10

    def get_mebi_bytes(self) -> int:
        return self.bytes_size >> 20

    def get_gibi_bytes(self) -> int:
        return self.bytes_size >> 30

    def get_tebi_bytes(self) -> int:
        return self.bytes_size >> 40

    def __str__(self) -> str:
        return f"{self.bytes_size} bytes"


@dataclass(frozen=True)
class SlotSharingGroup:
    name: str
    cpu_cores: float | None = None
    task_heap_memory: MemorySize | None = None
    task_off_heap_memory: MemorySize | None = None
    managed_memory: MemorySize | None = None
    external_resources: dict[str, float] = field(default_factory=dict, hash=False)

    def get_name(self) -> str:
        return self.name

    def get_cpu_cores(self) -> float | None:
        return self.cpu_cores

    def get_task_heap_memory(self) -> MemorySize | None:
        return self.task_heap_memory

    def get_task_off_heap_memory(self) -> MemorySize | None:
        return self.task_off_heap_memory

    def get_managed_memory(self) -> MemorySize | None:
        return self.managed_memory

    def get_external_resources(self) -> dict[str, float]:
        return dict(self.external_resources)

    def asks_for_resources(self) -> bool:
        return self != SlotSharingGroup(self.name)

    @staticmethod
    def builder(name: str) -> SlotSharingGroup.Builder:
        return SlotSharingGroup.Builder(SlotSharingGroup(name))

    class Builder:
        def __init__(self, group: SlotSharingGroup) -> None:
            self._group = group

        def _with(self, **changes: object) -> SlotSharingGroup.Builder:
            self._group = replace(self._group, **changes)
            return self

        def set_cpu_cores(self, cpu_cores: float) -> SlotSharingGroup.Builder:
            if (
                isinstance(cpu_cores, bool)
                or not isinstance(cpu_cores, int | float)
                or not (cpu_cores > 0)
            ):
                raise ConfigurationError(
                    f"slot sharing group {self._group.name!r}: the cpu cores should be "
                    f"positive, got {cpu_cores!r}"
                )
            return self._with(cpu_cores=cpu_cores)

        def set_task_heap_memory(self, task_heap_memory: MemorySize) -> SlotSharingGroup.Builder:
            if not isinstance(task_heap_memory, MemorySize) or task_heap_memory.bytes_size <= 0:
                raise ConfigurationError(
                    f"slot sharing group {self._group.name!r}: the task heap memory should be "
                    f"a positive MemorySize, got {task_heap_memory!r}"
                )
            return self._with(task_heap_memory=task_heap_memory)

        def set_task_heap_memory_mb(self, task_heap_memory_mb: int) -> SlotSharingGroup.Builder:
            return self.set_task_heap_memory(MemorySize.of_mebi_bytes(task_heap_memory_mb))

        def set_task_off_heap_memory(self, memory: MemorySize) -> SlotSharingGroup.Builder:
            return self._with(task_off_heap_memory=memory)

        def set_task_off_heap_memory_mb(self, memory_mb: int) -> SlotSharingGroup.Builder:
            return self._with(task_off_heap_memory=MemorySize.of_mebi_bytes(memory_mb))

        def set_managed_memory(self, managed_memory: MemorySize) -> SlotSharingGroup.Builder:
            return self._with(managed_memory=managed_memory)

        def set_managed_memory_mb(self, managed_memory_mb: int) -> SlotSharingGroup.Builder:
            return self._with(managed_memory=MemorySize.of_mebi_bytes(managed_memory_mb))

        def set_external_resource(self, name: str, value: float) -> SlotSharingGroup.Builder:
            return self._with(external_resources={**self._group.external_resources, name: value})

        def build(self) -> SlotSharingGroup:
            """As Flink's: a group with resources needs its cpu cores and task heap memory
            (the other memories default to zero); a group without any is a name alone."""
            group = self._group
            if group.cpu_cores is not None and group.task_heap_memory is not None:
                return replace(
                    group,
                    task_off_heap_memory=group.task_off_heap_memory or MemorySize(0),
                    managed_memory=group.managed_memory or MemorySize(0),
                )
            if group.asks_for_resources():
                raise ConfigurationError(
                    f"slot sharing group {group.name!r}: the cpu cores and task heap memory "
                    "are required when specifying the resource of a slot sharing group; set "
                    "both to positive values (set_cpu_cores, set_task_heap_memory)"
                )
            return group


_warned: set[str] = set()


def resources_not_applied(group: SlotSharingGroup) -> None:
    """Says, once per group, that the resources ``group`` asks for are not applied."""
    if group.asks_for_resources() and group.name not in _warned:
        _warned.add(group.name)
        log.warning(
            "Slot sharing group %r asks for resources (%s): barrierflow runs every operator "
            "in the job's own slots, whose resources are Spark's (spark.task.cpus, executor "
            "memory); the group's resources are not applied",
            group.name,
            group,
        )
