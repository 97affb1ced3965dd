"""PyFlink's ``pyflink.datastream.slot_sharing_group``."""

from barrierflow.api.slot_sharing_group import MemorySize, SlotSharingGroup

__all__ = ["MemorySize", "SlotSharingGroup"]
