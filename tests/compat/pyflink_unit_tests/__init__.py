"""PyFlink's own DataStream unit tests (Apache Flink's ``flink-python`` tests under
``pyflink/datastream/tests`` and ``pyflink/common/tests``) run on barrierflow, with only their
imports changed and their Java test harness replaced by small equivalents (``shims/``).

``python -m tests.compat.pyflink_unit_tests --flink-source DIR`` (a checkout of Apache Flink, or
its ``flink-python`` directory) or ``--fetch`` (a shallow clone of the release's tag; needs
network) rewrites the tests into a work directory, runs them with pytest and prints how many
passed, failed and were excluded, each exclusion with its reason (Java connectors, the JVM
gateway, the Table API). The ``apache-flink`` source distribution on the package index ships no
tests, so the tests come from Flink's source.
"""
