"""Internal: the control protocol between the JobMaster and the tasks. No public names
(docs/public-api.md).

The control protocol between the JobMaster and the slots and subtasks: its messages (what
carries checkpoint acknowledgements, triggers and notifications) and their encoding."""
