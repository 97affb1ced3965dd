"""The control protocol between the JobMaster and the slots and subtasks: its messages (what
carries checkpoint acknowledgements, triggers and notifications) and their encoding."""
