"""Internal: the task side: slots, tasks and their mailbox, input processors, operator chains and
operators, the network and timers. No public names: user functions subclass
``barrierflow.datastream.functions`` (docs/public-api.md)."""
