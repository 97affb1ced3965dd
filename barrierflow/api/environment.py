"""StreamExecutionEnvironment: where a job is declared, configured and executed (PyFlink names).

The environment knows the program, not the cluster: ``execute()`` builds the job's
``Pipeline`` and hands it to submission (``barrierflow/client/``), which checks everything it
can before Spark starts, plans the job and returns the JobMaster that runs it on this process,
the Spark driver.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

from barrierflow.api.checkpoint_config import CheckpointConfig, CheckpointingMode
from barrierflow.api.configuration import Configuration
from barrierflow.api.datastream import DataStream
from barrierflow.api.environment_shorthands import EnvironmentShorthands
from barrierflow.api.execution_config import ExecutionConfig
from barrierflow.api.execution_plan import execution_plan
from barrierflow.api.job_client import JobClient
from barrierflow.api.python_dependency_settings import PythonDependencySettings
from barrierflow.api.source_transformations import (
    WatermarkArgument,
    collection_transformation,
    dataframe_source,
    input_format_source,
    source_transformation,
    unwrapped_source,
)
from barrierflow.client.pipeline import BackendDeclaration, Pipeline, check_job_id
from barrierflow.client.submitter import JobSubmitter
from barrierflow.cluster.job_outcome import JobExecutionResult
from barrierflow.datastream.state_backend import (
    HashMapStateBackend,
    StateBackend,
    backend_options,
    incremental_checkpointing,
    kind_of,
    local_directories,
    state_backend_named,
)
from barrierflow.graph.transformation import Transformation, TransformationKind

log = logging.getLogger("barrierflow")

# The options that set the environment itself, and the method each calls with the option's
# value (its checkpoint config and execution config apply their own options). Options not
# here are read where they are used: execution.checkpointing.incremental, for one, when the
# job is planned, so that it applies to a RocksDB backend set in code too.
_SETTERS = {
    "execution.buffer-timeout": "set_buffer_timeout",
    "state.backend.type": "_set_state_backend_type",
    "execution.state-recovery.path": "set_restore_path",
    "execution.state-recovery.ignore-unclaimed-state": "_set_allow_non_restored_state",
    "execution.state-recovery.claim-mode": "_set_claim_mode",
}


def _ensure_progress_visible() -> None:
    """A user running a plain script sees checkpoint lines without configuring logging."""
    root = logging.getLogger()
    if not root.handlers and not log.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        log.addHandler(handler)
        log.setLevel(logging.INFO)
    logging.getLogger("py4j").setLevel(logging.WARNING)


class StreamExecutionEnvironment(PythonDependencySettings, EnvironmentShorthands):
    def __init__(self) -> None:
        # Everything the program declared, in order; a job is the sinks declared since the
        # previous execute() and what they read from (``_job``).
        self._transformations: list[Transformation] = []
        self._executed_sinks: set[int] = set()  # ids of sinks an earlier execute() ran
        self._execution_config = ExecutionConfig(self)
        self._checkpoint_config = CheckpointConfig()
        self._buffer_timeout_ms = 100
        self._buffer_size = 1024
        self._restore_path: str | None = None
        self._allow_non_restored_state = False
        self._claim_mode = "NO_CLAIM"
        self._resume_job_id: str | None = None
        self._spark = None
        self._state_backend: StateBackend = HashMapStateBackend()
        self._configuration = Configuration()
        # Where execute() sends jobs: in the submission context installed now (that of
        # `barrierflow run`, whose configuration the program's own settings override).
        self._submitter = JobSubmitter.in_current_context()
        configuration = Configuration.from_environment()
        given = self._submitter.context.configuration
        self.configure(configuration if given is None else configuration.merge(given))

    @staticmethod
    def get_execution_environment(
        configuration: Configuration | None = None,
    ) -> StreamExecutionEnvironment:
        env = StreamExecutionEnvironment()
        if configuration is not None:
            env.configure(configuration)
        return env

    def configure(self, configuration: Configuration | dict) -> StreamExecutionEnvironment:
        """Applies every option set in ``configuration`` (Flink keys; see config_options)."""
        conf = (
            configuration
            if isinstance(configuration, Configuration)
            else Configuration(configuration)
        )
        self._configuration = self._configuration.merge(conf)
        self._checkpoint_config.configure(conf)
        self._execution_config.configure(conf)
        for key in conf:
            if key in _SETTERS:
                getattr(self, _SETTERS[key])(conf.get(key))
        return self

    def add_jars(self, *jars_path: str) -> None:
        """PyFlink's jars are for its Java connectors; barrierflow's connectors are Python, so
        they are kept as ``pipeline.jars``, with the warning that they do nothing here."""
        self.configure({"pipeline.jars": ";".join(jars_path)})

    def add_classpaths(self, *classpaths: str) -> None:
        """As ``add_jars``: kept as ``pipeline.classpaths``, with a warning."""
        self.configure({"pipeline.classpaths": ";".join(classpaths)})

    def get_configuration(self) -> Configuration:
        return self._configuration

    def get_config(self) -> ExecutionConfig:
        """PyFlink's ExecutionConfig: parallelism, watermark interval, global job parameters."""
        return self._execution_config

    # --- configuration --------------------------------------------------------------------

    def set_parallelism(self, parallelism: int) -> StreamExecutionEnvironment:
        self._execution_config.set_parallelism(parallelism)
        return self

    def get_parallelism(self) -> int:
        return self._execution_config.get_parallelism()

    def set_max_parallelism(self, max_parallelism: int) -> StreamExecutionEnvironment:
        self._execution_config.set_max_parallelism(max_parallelism)
        return self

    def get_max_parallelism(self) -> int:
        return self._execution_config.get_max_parallelism()

    def enable_checkpointing(
        self, interval: int, mode: CheckpointingMode = CheckpointingMode.EXACTLY_ONCE
    ) -> StreamExecutionEnvironment:
        self._checkpoint_config.set_checkpoint_interval(interval)
        self._checkpoint_config.set_checkpointing_mode(mode)
        return self

    def get_checkpoint_config(self) -> CheckpointConfig:
        return self._checkpoint_config

    def get_checkpoint_interval(self) -> int:
        return self._checkpoint_config.interval_ms

    def set_state_backend(self, backend: StateBackend) -> StreamExecutionEnvironment:
        """``HashMapStateBackend()`` (the default) or ``EmbeddedRocksDBStateBackend()``."""
        kind_of(backend)  # refuses anything else, saying what it takes
        self._state_backend = backend
        return self

    def get_state_backend(self) -> StateBackend:
        return self._state_backend

    def _set_state_backend_type(self, kind: str) -> None:
        if self._state_backend.name != kind:  # one of that kind set in code keeps its settings
            self.set_state_backend(state_backend_named(kind))

    def set_restore_path(self, path: str | None) -> StreamExecutionEnvironment:
        """Start from this savepoint or retained checkpoint (its directory or its
        ``_metadata``); ``execution.state-recovery.path``."""
        self._restore_path = path
        return self

    def _set_allow_non_restored_state(self, allow: bool) -> None:
        self._allow_non_restored_state = allow

    def _set_claim_mode(self, claim_mode: str) -> None:
        self._claim_mode = claim_mode

    def resume_job(self, job_id: str | None) -> StreamExecutionEnvironment:
        """Run as job ``job_id`` again, whose JobMaster (the driver) died: take over its
        retained checkpoints under the checkpoint storage, restore the latest, and go on
        writing to the same job directory."""
        self._resume_job_id = check_job_id(job_id)
        return self

    def set_spark_session(self, spark) -> StreamExecutionEnvironment:
        self._spark = spark
        return self

    # --- sources ----------------------------------------------------------------------------

    def from_source(
        self,
        source: Any,
        watermark_strategy: WatermarkArgument = None,
        source_name: str | None = None,
        type_info: Any = None,
    ) -> DataStream:
        """PyFlink's ``from_source(source, watermark_strategy, source_name, type_info)``; also
        ``from_source(source, source_name)``. A strategy gives the records event timestamps and
        watermarks right after the source (``no_watermarks()`` without an assigner: none).
        ``type_info`` declares the type of the source's records (``print()`` writes them by it);
        they are not converted."""
        return self._stream(
            source_transformation(source, watermark_strategy, source_name, type_info)
        )

    def from_spark(
        self, df: Any, source_name: str = "Spark DataFrame", staging_dir: str | None = None
    ) -> DataStream:
        """A bounded stream of a Spark DataFrame's rows, as ``Row``s named by its columns (a
        backfill, a dimension table). Before the job starts, a Spark job of its own writes each
        partition as a Parquet file under ``staging_dir`` (Spark's writer; default: a new
        local temporary directory, which executors on other machines cannot reach: pass shared
        storage such as ``s3://bucket/staging`` on a cluster); those files are the splits,
        read as Arrow batches. The rows never pass through the driver."""
        return self.from_source(dataframe_source(df, staging_dir), source_name=source_name)

    def add_source(
        self, source_func: Any, source_name: str = "Custom Source", type_info: Any = None
    ) -> DataStream:
        """PyFlink's older entry point: ``from_source`` without a watermark strategy; takes a
        source, or a ``SourceFunction`` wrapping one."""
        source = unwrapped_source(source_func)
        return self.from_source(source, source_name=source_name, type_info=type_info)

    def create_input(self, input_format: Any, type_info: Any = None) -> DataStream:
        """PyFlink's ``create_input``: a stream of the records of an input format that reads
        files in Python (``AvroInputFormat``), as a bounded FileSource."""
        source, type_info = input_format_source(input_format, type_info)
        return self.from_source(source, source_name="Custom Source", type_info=type_info)

    def from_collection(self, collection: Any, type_info: Any = None) -> DataStream:
        """A bounded stream of the given values, in their order (read by one subtask, as
        PyFlink's); with ``type_info``, converted to it here, as PyFlink converts them (tuples
        to ``Row`` for ``Types.ROW``...)."""
        return self._stream(collection_transformation(collection, type_info))

    def _stream(self, source: Transformation) -> DataStream:
        self._add(source)
        return DataStream(self, source)

    def _add(self, transformation: Transformation) -> None:
        self._transformations.append(transformation)

    def _job(self) -> list[Transformation]:
        """What the next ``execute()`` translates: the program's transformations in the order
        declared, without the sinks an earlier ``execute()`` ran. As in PyFlink, a program may
        build a stream, execute it, then add operators to the same stream and execute again:
        the new job reads from the streams declared before. Positions in this list name the
        operators without a uid: the same in every run of the program (and, for a program
        that executes once, its positions, as before)."""
        return [
            t
            for t in self._transformations
            if t.kind is not TransformationKind.SINK or t.id not in self._executed_sinks
        ]

    # --- execution --------------------------------------------------------------------------

    def _pipeline(self, job_name: str) -> Pipeline:
        """The next job as declared so far, as submission takes it."""
        backend = self._state_backend
        return Pipeline(
            job_name=job_name,
            transformations=tuple(self._job()),
            configuration=self._configuration,
            parallelism=self.get_parallelism(),
            max_parallelism=self.get_max_parallelism(),
            buffer_timeout_ms=self._buffer_timeout_ms,
            buffer_size=self._buffer_size,
            checkpointing=self._checkpoint_config.checkpointing(),
            state_backend=BackendDeclaration(
                kind_of(backend).name,
                tuple(backend_options(backend).items()),
                incremental_checkpointing(backend),
                local_directories(backend),
            ),
            restart_strategy=self.get_restart_strategy().create(),
            restore_path=self._restore_path,
            allow_non_restored_state=self._allow_non_restored_state,
            claim_restored=self._claim_mode == "CLAIM",
            resume_job_id=self._resume_job_id,
            spark=self._spark,
        )

    def execute(self, job_name: str = "barrierflow job") -> JobExecutionResult:
        """Runs the job and blocks until it finishes (bounded sources) or fails for good.
        The job is what was declared since the previous ``execute`` (as in PyFlink)."""
        _ensure_progress_visible()
        return self._submitted(job_name).run()

    def execute_async(self, job_name: str = "barrierflow job") -> JobClient:
        _ensure_progress_visible()
        return JobClient(self._submitted(job_name))

    def _submitted(self, job_name: str):
        """The JobMaster of the next job, which ``execute`` runs and ``execute_async`` wraps."""
        job_master = self._submitter.submit(self._pipeline(job_name))
        self._end_job()
        return job_master

    def get_execution_plan(self) -> str:
        """The job the next ``execute()`` would run, as Flink's plan JSON (operators,
        parallelism, partitioners); nothing runs."""
        return execution_plan(self._pipeline("plan").stream_graph())

    def _end_job(self) -> None:
        """The sinks declared so far ran: the next ``execute()`` runs those declared after."""
        self._executed_sinks.update(
            t.id for t in self._transformations if t.kind is TransformationKind.SINK
        )
