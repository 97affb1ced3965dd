"""Test harnesses that run operators and tasks in-process: no Spark, no network."""
