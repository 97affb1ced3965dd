"""StreamExecutionEnvironment: where a job is declared, configured and executed (PyFlink names).

``execute()`` validates everything it can before Spark starts (a bad setting fails in
milliseconds, not after a cluster round trip), translates the program into its graphs and
hands it to a JobMaster on this process, the Spark driver.
"""

from __future__ import annotations

import functools
import logging
import os
import sys
import tempfile
import uuid
from typing import Any

from barrierflow.api.checkpoint_config import (
    CheckpointConfig,
    CheckpointingMode,
    ExternalizedCheckpointRetention,
)
from barrierflow.api.configuration import Configuration
from barrierflow.api.datastream import DataStream
from barrierflow.api.execution_config import ExecutionConfig
from barrierflow.api.execution_mode import RuntimeExecutionMode
from barrierflow.api.execution_plan import execution_plan
from barrierflow.api.job_client import JobClient
from barrierflow.api.restart_strategies import RestartStrategies, RestartStrategyConfiguration
from barrierflow.checkpoint import file_systems
from barrierflow.checkpoint.metadata import CheckpointMetadata
from barrierflow.checkpoint.storage import CheckpointStorage, job_root_uri, locate_snapshot
from barrierflow.checkpoint.storage_layout import RESTORED_FROM_FILE
from barrierflow.checkpoint.storage_retry import with_storage_retries
from barrierflow.cluster.job_master import JobMaster
from barrierflow.cluster.job_outcome import JobExecutionResult
from barrierflow.cluster.job_plan import JobPlan
from barrierflow.cluster.rest.server import RestConfig
from barrierflow.cluster.restart_strategy import from_configuration as restart_from_configuration
from barrierflow.common.typeinfo import checked_type
from barrierflow.connectors.collection_source import CollectionSource
from barrierflow.connectors.job_settings import JobSettings
from barrierflow.connectors.source import Source
from barrierflow.coordination.checkpoint_coordinator import CoordinatorConfig
from barrierflow.coordination.state_mapping import StateMapping, map_state
from barrierflow.datastream.functions.one_input import SourceFunction
from barrierflow.datastream.state_backend import (
    HashMapStateBackend,
    StateBackend,
    backend_options,
    incremental_checkpointing,
    kind_of,
    state_backend_named,
)
from barrierflow.errors import ConfigurationError, CorruptCheckpointError, StorageConfigError
from barrierflow.eventtime.watermark_strategy import WatermarkStrategy
from barrierflow.graph.execution_graph import build_execution_graph
from barrierflow.graph.job_graph import build_job_graph
from barrierflow.graph.stream_graph import build_stream_graph
from barrierflow.graph.transformation import Transformation, TransformationKind
from barrierflow.protocol.checkpoint_barrier import (
    CHECKPOINT,
    Alignment,
    CheckpointOptions,
)
from barrierflow.runtime.network import channel_faults
from barrierflow.runtime.task_descriptor import TaskConfig
from barrierflow.state.backends import StateBackendConfig
from barrierflow.state.declared_states import declared_states_of
from barrierflow.state.key_groups import DEFAULT_MAX_PARALLELISM, UPPER_BOUND_MAX_PARALLELISM
from barrierflow.type_conversion import IntegerOverflow, value_converter

log = logging.getLogger("barrierflow")


# Set by the ``barrierflow run`` command before it runs a job file; applied to every
# environment the file creates, over what the file sets itself. One entry is a hook, not a
# setting: "on_job_master", a callable given each JobMaster once built, before it runs (the
# command's status line reads its ``status_view``); it must return at once.
_cli_overrides: dict[str, Any] = {}


def _ensure_progress_visible() -> None:
    """A user running a plain script sees checkpoint lines without configuring logging."""
    root = logging.getLogger()
    if not root.handlers and not log.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        log.addHandler(handler)
        log.setLevel(logging.INFO)
    logging.getLogger("py4j").setLevel(logging.WARNING)


class StreamExecutionEnvironment:
    def __init__(self) -> None:
        # Everything the program declared, in order; a job is the sinks declared since the
        # previous execute() and what they read from (``_job``).
        self._transformations: list[Transformation] = []
        self._executed_sinks: set[int] = set()  # ids of sinks an earlier execute() ran
        self._parallelism = 1
        self._max_parallelism = DEFAULT_MAX_PARALLELISM
        self._checkpoint_config = CheckpointConfig()
        self._restart_strategy: RestartStrategyConfiguration | None = None
        self._buffer_timeout_ms = 100
        self._buffer_size = 1024
        self._restore_path: str | None = None
        self._allow_non_restored_state = False
        self._claim_mode = "NO_CLAIM"
        self._resume_job_id: str | None = None
        self._spark = None
        self._state_backend: StateBackend = HashMapStateBackend()
        self._configuration = Configuration()
        cli_conf = _cli_overrides.get("configuration")
        self.configure(Configuration.from_environment().merge(cli_conf or Configuration()))

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
        cc = self._checkpoint_config
        cp = "execution.checkpointing."
        appliers = {
            cp + "interval": lambda v: cc.set_checkpoint_interval(v),
            cp + "mode": lambda v: cc.set_checkpointing_mode(CheckpointingMode(v)),
            cp + "timeout": cc.set_checkpoint_timeout,
            cp + "min-pause": cc.set_min_pause_between_checkpoints,
            cp + "max-concurrent-checkpoints": cc.set_max_concurrent_checkpoints,
            cp + "tolerable-failed-checkpoints": cc.set_tolerable_checkpoint_failure_number,
            cp + "externalized-checkpoint-retention": lambda v: (
                cc.set_externalized_checkpoint_retention(ExternalizedCheckpointRetention(v))
            ),
            cp + "checkpoints-after-tasks-finish": cc.set_checkpoints_after_tasks_finish,
            cp + "dir": cc.set_checkpoint_storage,
            cp + "savepoint-dir": cc.set_savepoint_dir,
            cp + "num-retained": cc.set_num_retained_checkpoints,
            cp + "data-inline-threshold": cc.set_data_inline_threshold,
            cp + "write-buffer-size": lambda v: setattr(cc, "write_buffer_size", v),
            cp + "unaligned.enabled": cc.enable_unaligned_checkpoints,
            cp + "aligned-checkpoint-timeout": cc.set_aligned_checkpoint_timeout,
            cp + "unaligned.forced": cc.set_force_unaligned_checkpoints,
            cp + "unaligned.max-subtasks-per-channel-state-file": lambda v: setattr(
                cc, "max_subtasks_per_channel_state_file", v
            ),
            "parallelism.default": self.set_parallelism,
            "pipeline.max-parallelism": self.set_max_parallelism,
            "execution.buffer-timeout": self.set_buffer_timeout,
            # execution.checkpointing.incremental is read when the job is planned: it applies
            # to a RocksDB backend set in code too, unless that one says otherwise.
            "state.backend.type": self._set_state_backend_type,
            "execution.state-recovery.path": self.set_restore_path,
            "execution.state-recovery.ignore-unclaimed-state": lambda v: setattr(
                self, "_allow_non_restored_state", v
            ),
            "execution.state-recovery.claim-mode": lambda v: setattr(self, "_claim_mode", v),
        }
        for key in conf:
            if key in appliers:
                appliers[key](conf.get(key))
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
        """PyFlink's ExecutionConfig: watermark interval, global job parameters."""
        return ExecutionConfig(self)

    def set_runtime_mode(
        self, execution_mode: RuntimeExecutionMode | str
    ) -> StreamExecutionEnvironment:
        """STREAMING (the default), BATCH (bounded inputs; final results only, no
        checkpoints) or AUTOMATIC (BATCH when every source is bounded)."""
        mode = getattr(execution_mode, "value", execution_mode)
        return self.configure({"execution.runtime-mode": mode})

    def _is_batch(self) -> bool:
        """Whether the job runs in BATCH mode; BATCH with an unbounded source is an error."""
        mode = self._configuration.get("execution.runtime-mode")
        if mode == "STREAMING":
            return False
        sources = [t for t in self._job_reach() if t.kind is TransformationKind.SOURCE]
        unbounded = [t for t in sources if not t.function.is_bounded()]
        if mode == "AUTOMATIC":
            return not unbounded
        if unbounded:
            raise ConfigurationError(
                f"runtime mode BATCH needs bounded sources; {unbounded[0].name!r} "
                f"({unbounded[0].function!r:.100}) is not bounded: run it in STREAMING mode"
            )
        return True

    # --- configuration --------------------------------------------------------------------

    def set_parallelism(self, parallelism: int) -> StreamExecutionEnvironment:
        if not isinstance(parallelism, int) or parallelism < 1:
            raise ConfigurationError(f"parallelism must be a positive integer, got {parallelism!r}")
        self._parallelism = parallelism
        return self

    def get_parallelism(self) -> int:
        return self._parallelism

    def set_max_parallelism(self, max_parallelism: int) -> StreamExecutionEnvironment:
        if not isinstance(max_parallelism, int) or not (
            1 <= max_parallelism <= UPPER_BOUND_MAX_PARALLELISM
        ):
            raise ConfigurationError(
                f"max parallelism must be between 1 and {UPPER_BOUND_MAX_PARALLELISM}, "
                f"got {max_parallelism!r}"
            )
        self._max_parallelism = max_parallelism
        return self

    def get_max_parallelism(self) -> int:
        return self._max_parallelism

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

    def set_restart_strategy(
        self, restart_strategy_configuration: RestartStrategyConfiguration
    ) -> StreamExecutionEnvironment:
        """``RestartStrategies.no_restart()``, ``fixed_delay_restart(...)``...; each job gets a
        fresh strategy of it. ``fall_back_restart()`` leaves it to ``restart-strategy.*``."""
        if not isinstance(restart_strategy_configuration, RestartStrategyConfiguration):
            raise ConfigurationError(
                "set_restart_strategy() takes a RestartStrategies.* configuration (from "
                f"barrierflow.common), got {restart_strategy_configuration!r}"
            )
        self._restart_strategy = restart_strategy_configuration
        return self

    def get_restart_strategy(self) -> RestartStrategyConfiguration:
        """What ``set_restart_strategy`` set; ``fall_back_restart()`` if nothing was."""
        return self._restart_strategy or RestartStrategies.fall_back_restart()

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

    def _incremental_checkpoints(self) -> bool:
        backend = self._state_backend
        if not kind_of(backend).incremental_checkpoints:
            return False  # a kind that always takes full snapshots (hashmap, as in Flink)
        explicit = incremental_checkpointing(backend)
        if explicit is not None:
            return explicit
        return self._configuration.get("execution.checkpointing.incremental")

    def _state_backend_config(self) -> StateBackendConfig:
        """What every subtask's backend is: its kind, and the kind's options set in the
        configuration (parsed here) or by the backend object; the others take their defaults."""
        kind = kind_of(self._state_backend)
        conf = self._configuration
        return StateBackendConfig(
            kind=kind.name,
            local_root=conf.get("taskmanager.state.local.root-dirs"),
            incremental=self._incremental_checkpoints(),
            local_recovery=conf.get("execution.state-recovery.from-local"),
            options=tuple(
                {
                    **{o.key: conf.get(o.key) for o in kind.options if conf.contains(o.key)},
                    **backend_options(self._state_backend),
                }.items()
            ),
        )

    def set_buffer_timeout(self, timeout_ms: int) -> StreamExecutionEnvironment:
        if not isinstance(timeout_ms, int) or timeout_ms < 1:
            raise ConfigurationError(f"buffer timeout must be >= 1 ms, got {timeout_ms!r}")
        self._buffer_timeout_ms = timeout_ms
        return self

    def get_buffer_timeout(self) -> int:
        return self._buffer_timeout_ms

    def set_restore_path(self, path: str | None) -> StreamExecutionEnvironment:
        """Start from this savepoint or retained checkpoint (its directory or its
        ``_metadata``); ``execution.state-recovery.path``."""
        self._restore_path = path
        return self

    def resume_job(self, job_id: str | None) -> StreamExecutionEnvironment:
        """Run as job ``job_id`` again, whose JobMaster (the driver) died: take over its
        retained checkpoints under the checkpoint storage, restore the latest, and go on
        writing to the same job directory."""
        if job_id is not None and not (isinstance(job_id, str) and job_id.isalnum()):
            raise ConfigurationError(f"a job id is letters and digits, got {job_id!r}")
        self._resume_job_id = job_id
        return self

    def set_spark_session(self, spark) -> StreamExecutionEnvironment:
        self._spark = spark
        return self

    # --- sources ----------------------------------------------------------------------------

    def from_source(
        self,
        source: Any,
        watermark_strategy: WatermarkStrategy | str | None = None,
        source_name: str | None = None,
        type_info: Any = None,
    ) -> DataStream:
        """PyFlink's ``from_source(source, watermark_strategy, source_name, type_info)``; also
        ``from_source(source, source_name)``. A strategy gives the records event timestamps and
        watermarks right after the source (``no_watermarks()`` without an assigner: none).
        ``type_info`` declares the type of the source's records (``print()`` writes them by it);
        they are not converted."""
        type_info = checked_type(type_info, "from_source()")
        if not isinstance(source, Source):
            raise ConfigurationError(
                f"from_source() needs a source such as SequenceSource or FileSource, got {source!r}"
            )
        if isinstance(watermark_strategy, str) and source_name is None:
            watermark_strategy, source_name = None, watermark_strategy
        if watermark_strategy is not None and not isinstance(watermark_strategy, WatermarkStrategy):
            raise ConfigurationError(
                "from_source() takes a WatermarkStrategy (from barrierflow.common) as its second "
                f"argument, or the source's name, got {watermark_strategy!r}"
            )
        if watermark_strategy is not None and not (
            watermark_strategy.generates_watermarks or watermark_strategy.timestamp_assigner
        ):
            watermark_strategy = None  # no_watermarks(): nothing to do after the source
        t = Transformation(
            TransformationKind.SOURCE,
            source_name or "Source",
            [],
            source,
            watermark_strategy=watermark_strategy,
            output_type=type_info,
        )
        self._add(t)
        return DataStream(self, t)

    def from_spark(
        self, df: Any, source_name: str = "Spark DataFrame", staging_dir: str | None = None
    ) -> DataStream:
        """A bounded stream of a Spark DataFrame's rows, as ``Row``s named by its columns (a
        backfill, a dimension table). Before the job starts, a Spark job of its own writes each
        partition as a Parquet file under ``staging_dir`` (Spark's writer; default: a new
        local temporary directory, which executors on other machines cannot reach: pass shared
        storage such as ``s3://bucket/staging`` on a cluster); those files are the splits,
        read as Arrow batches. The rows never pass through the driver."""
        from pyspark.sql import DataFrame

        from barrierflow.cluster.spark.dataframe_staging import stage_dataframe
        from barrierflow.connectors.staged_files_source import StagedFilesSource

        if not isinstance(df, DataFrame):
            raise ConfigurationError(
                f"from_spark() takes a Spark DataFrame, not {type(df).__name__}"
            )
        directory = staging_dir or tempfile.mkdtemp(prefix="barrierflow-from-spark-")
        source = StagedFilesSource(
            functools.partial(stage_dataframe, df, directory), f"from_spark -> {directory}"
        )
        return self.from_source(source, source_name=source_name)

    def add_source(
        self, source_func: Any, source_name: str = "Custom Source", type_info: Any = None
    ) -> DataStream:
        """PyFlink's older entry point: ``from_source`` without a watermark strategy; takes a
        source, or a ``SourceFunction`` wrapping one."""
        if isinstance(source_func, SourceFunction):
            source_func = source_func.wrapped_source
        return self.from_source(source_func, source_name=source_name, type_info=type_info)

    def create_input(self, input_format: Any, type_info: Any = None) -> DataStream:
        """PyFlink's ``create_input``: a stream of the records of an input format that reads
        files in Python (``AvroInputFormat``), as a bounded FileSource."""
        as_source = getattr(input_format, "as_source", None)
        if as_source is None:
            raise ConfigurationError(
                f"create_input() takes an input format barrierflow reads in Python, such as "
                f"AvroInputFormat(path, schema); {input_format!r:.100} would be a Java input "
                "format, which needs the JVM: read files with FileSource instead"
            )
        if type_info is None:
            type_info = input_format.get_produced_type()
        return self.from_source(as_source(), source_name="Custom Source", type_info=type_info)

    def from_collection(self, collection: Any, type_info: Any = None) -> DataStream:
        """A bounded stream of the given values, in their order (read by one subtask, as
        PyFlink's); with ``type_info``, converted to it here, as PyFlink converts them (tuples
        to ``Row`` for ``Types.ROW``...)."""
        type_info = checked_type(type_info, "from_collection()")
        # PyFlink hands the values to Java as they are: a BYTE, SHORT or INT out of range
        # wraps as Java's cast does
        convert = None if type_info is None else value_converter(type_info, IntegerOverflow.WRAP)
        try:
            if convert is not None:
                collection = [convert(value) for value in collection]
            source = CollectionSource(collection)
        except TypeError as e:
            raise ConfigurationError(f"from_collection(): {e}") from None
        stream = self.from_source(source, "Collection Source")
        t = stream.get_transformation()
        t.output_type = type_info
        t.parallelism = 1  # as PyFlink's: one reader, so the values keep their order
        return stream

    def _add(self, t: Transformation) -> None:
        self._transformations.append(t)

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

    def _job_reach(self) -> list[Transformation]:
        """The transformations the next job's sinks read from, directly or not."""
        job = self._job()
        reached: set[int] = set()
        pending = [t for t in job if t.kind is TransformationKind.SINK]
        while pending:
            t = pending.pop()
            if t.id not in reached:
                reached.add(t.id)
                pending.extend(t.inputs)
        return [t for t in job if t.id in reached]

    # --- execution --------------------------------------------------------------------------

    def _apply_cli_overrides(self) -> None:
        if "parallelism" in _cli_overrides:
            self.set_parallelism(_cli_overrides["parallelism"])
        if "checkpoint_dir" in _cli_overrides:
            self._checkpoint_config.set_checkpoint_storage(_cli_overrides["checkpoint_dir"])
        if "restore_path" in _cli_overrides:
            self._restore_path = _cli_overrides["restore_path"]
        if "allow_non_restored_state" in _cli_overrides:
            self._allow_non_restored_state = _cli_overrides["allow_non_restored_state"]
        if "claim_mode" in _cli_overrides:
            self._claim_mode = _cli_overrides["claim_mode"]
        if "resume_job_id" in _cli_overrides:
            self.resume_job(_cli_overrides["resume_job_id"])

    def _plan(self, job_name: str) -> JobPlan:
        """Validates the configuration and translates the program; no Spark involved."""
        self._apply_cli_overrides()
        if not isinstance(job_name, str) or not job_name:
            raise ConfigurationError(f"execute() needs a job name, got {job_name!r}")
        batch = self._is_batch()
        stream_graph = build_stream_graph(
            job_name, self._job(), self._parallelism, self._max_parallelism, batch
        )
        graph = build_execution_graph(build_job_graph(stream_graph))
        job_id = self._resume_job_id or uuid.uuid4().hex
        cc = self._checkpoint_config
        checkpointing = cc.is_checkpointing_enabled() and not batch
        if batch and cc.is_checkpointing_enabled():
            log.info("Job %s runs in BATCH mode: no checkpoints are taken", job_name)
        if self._resume_job_id and (self._restore_path or not checkpointing):
            raise ConfigurationError(
                f"resuming job {job_id} needs checkpointing enabled, and no restore path: it "
                "restores the job's own latest checkpoint"
            )
        if checkpointing and not cc.storage:
            # Flink keeps such a job's checkpoints in the JobManager's memory; barrierflow
            # has no such storage, so it uses a local directory and says where
            default = os.path.join(tempfile.gettempdir(), "barrierflow", "checkpoints")
            cc.set_checkpoint_storage(f"file://{default}")
            log.info(
                "Checkpointing is enabled and no checkpoint storage is set: checkpoints go to "
                "%s (set_checkpoint_storage() or --checkpoint-dir to choose)",
                default,
            )
        # s3.* settings for this process (the JobMaster, restores) and, through TaskConfig,
        # for every executor: before anything opens storage
        fs_settings = file_systems.settings_from(self._configuration)
        file_systems.initialize(fs_settings)
        storage_uri = None
        if cc.storage:  # also without checkpointing: the command line finds the job there
            storage_uri = job_root_uri(cc.storage, job_id)
            storage = CheckpointStorage(storage_uri)
            # a StorageConfigError if not; retried while the storage is unreachable
            with_storage_retries(storage.check_writable, "write to", storage_uri)
            if self._restore_path and not self._resume_job_id:
                # as soon as the job's directory is: a driver killed before the job's first
                # checkpoint leaves nothing else for `run --resume` to restore
                restore_path = self._restore_path.encode()
                with_storage_retries(
                    lambda: storage.write_small_file(RESTORED_FROM_FILE, restore_path),
                    "record the restore path in",
                    storage_uri,
                )
        if checkpointing:
            cc.check_unaligned()
        coordinator_config = CoordinatorConfig(
            interval_s=cc.interval_ms / 1000 if checkpointing else None,
            timeout_s=cc.timeout_ms / 1000,
            min_pause_s=cc.min_pause_ms / 1000,
            max_concurrent=cc.max_concurrent,
            tolerable_failures=cc.tolerable_failures,
            num_retained=cc.num_retained,
            checkpoints_after_tasks_finish=cc.checkpoints_after_tasks_finish,
            checkpoint_options=_periodic_checkpoint_options(cc),
        )
        restore_path = self._restore_path
        restore_from = restore_root = None
        if self._resume_job_id and storage_uri:
            restore_path, restore_from, restore_root = _started_from(storage_uri)
        elif restore_path:
            restore_from, restore_root = _read_restore_point(restore_path)
        strategy = self.get_restart_strategy().create() or restart_from_configuration(
            self._configuration, checkpointing
        )
        task_config = TaskConfig(
            buffer_size=self._buffer_size,
            buffer_timeout_s=self._buffer_timeout_ms / 1000,
            initial_credit=4,
            checkpointing=checkpointing,
            exactly_once=cc.mode is CheckpointingMode.EXACTLY_ONCE,
            storage_uri=storage_uri,
            file_systems=fs_settings,
            inline_threshold=cc.data_inline_threshold_bytes,
            write_buffer_size=cc.write_buffer_size,
            max_parallelism=self._max_parallelism,
            state_backend=self._state_backend_config(),
            unaligned_checkpoints=checkpointing and cc.unaligned,
            aligned_checkpoint_timeout_ms=cc.aligned_checkpoint_timeout_ms,
            # BATCH: the watermark jumps to the end of time once the input ended, so that no
            # record is late and every window and timer fires once, with all its records
            auto_watermark_interval_ms=0
            if batch
            else self._configuration.get("pipeline.auto-watermark-interval"),
            job_parameters=self._configuration.get("pipeline.global-job-parameters"),
            channel_faults=channel_faults.installed(),
        )
        return JobPlan(
            job_id=job_id,
            job_name=job_name,
            graph=graph,
            task_config=task_config,
            coordinator_config=coordinator_config,
            restart_strategy=strategy,
            restore_from=restore_from,
            restore_root_uri=restore_root,
            restore_path=restore_path,
            retain_on_cancel=cc.externalized_retention
            is ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION,
            resume=self._resume_job_id is not None,
            claim_restored=self._claim_mode == "CLAIM",
            allow_non_restored_state=self._allow_non_restored_state,
            savepoint_dir=cc.savepoint_dir,
            rest=RestConfig(
                self._configuration.get("rest.address"),
                self._configuration.get("rest.port"),
                port_is_default=not self._configuration.contains("rest.port"),
            ),
        )

    def _check_restore(self, plan: JobPlan) -> StateMapping | None:
        """Fails before Spark starts when the restored state does not fit the job."""
        if plan.restore_from is None:
            return None
        job_graph = plan.graph.job_graph
        # The dry run also opens the keyed functions to compare the states they declare.
        declared = declared_states_of(job_graph) if _cli_overrides.get("dry_run") else None
        mapping = map_state(plan.restore_from, job_graph, declared)
        problems = mapping.problems(plan.allow_non_restored_state)
        if problems and not _cli_overrides.get("dry_run"):
            raise ConfigurationError(
                f"cannot restore from {self._restore_path}: " + "; ".join(problems)
            )
        return mapping

    def _check_connectors(self) -> None:
        """Connectors that can check their configuration (a server reachable, a setting on
        it) do it here, on the driver: a bad setting fails now, not in a restart loop."""
        from barrierflow.cluster.spark.session_catalog import SessionCatalog

        cc = self._checkpoint_config
        job = JobSettings(
            checkpointing=cc.is_checkpointing_enabled(),
            exactly_once=cc.mode is CheckpointingMode.EXACTLY_ONCE,
            interval_ms=cc.interval_ms,
            timeout_ms=cc.timeout_ms,
            max_concurrent=cc.max_concurrent,
            table_catalog=SessionCatalog(self._given_or_active_spark),
        )
        for t in self._job_reach():
            if t.kind in (TransformationKind.SOURCE, TransformationKind.SINK):
                t.function.check(job)

    def _given_or_active_spark(self) -> Any:
        """The session the job will run on, if there is one yet (SparkTableSink's catalog)."""
        if self._spark is not None:
            return self._spark
        from pyspark.sql import SparkSession

        return SparkSession.getActiveSession()

    def _job_master(self, job_name: str) -> JobMaster:
        plan = self._plan(job_name)
        mapping = self._check_restore(plan)
        if _cli_overrides.get("dry_run"):
            raise DryRunFinished(*_dry_run_report(plan, mapping, self._restore_path))
        self._check_connectors()
        from barrierflow.cluster.spark.deployment import SparkDeployer
        from barrierflow.cluster.spark.session import (
            default_spark_log,
            get_or_create_context,
            network_hosts,
        )

        if self._spark is not None:
            context = self._spark.sparkContext
        else:  # a SparkContext without a SparkSession: see get_or_create_context
            context = get_or_create_context(
                plan.graph.num_slots,
                master=_cli_overrides.get("spark_master"),
                conf=_cli_overrides.get("spark_conf"),
                spark_log=None if _cli_overrides.get("verbose") else default_spark_log(),
            )
        plan.bind_host, plan.slot_bind_host = network_hosts(context)
        job_master = JobMaster(plan, SparkDeployer(context))
        if (on_job_master := _cli_overrides.get("on_job_master")) is not None:
            on_job_master(job_master)
        return job_master

    def execute(self, job_name: str = "barrierflow job") -> JobExecutionResult:
        """Runs the job and blocks until it finishes (bounded sources) or fails for good.
        The job is what was declared since the previous ``execute`` (as in PyFlink)."""
        _ensure_progress_visible()
        return self._submitted(job_name).run()

    def execute_async(self, job_name: str = "barrierflow job") -> JobClient:
        _ensure_progress_visible()
        return JobClient(self._submitted(job_name))

    def _submitted(self, job_name: str) -> JobMaster:
        job_master = self._job_master(job_name)
        self._end_job()
        return job_master

    def get_execution_plan(self) -> str:
        """The job the next ``execute()`` would run, as Flink's plan JSON (operators,
        parallelism, partitioners); nothing runs."""
        graph = build_stream_graph(
            "plan", self._job(), self._parallelism, self._max_parallelism, self._is_batch()
        )
        return execution_plan(graph)

    def _end_job(self) -> None:
        """The sinks declared so far ran: the next ``execute()`` runs those declared after."""
        self._executed_sinks.update(
            t.id for t in self._transformations if t.kind is TransformationKind.SINK
        )


class DryRunFinished(Exception):
    """``barrierflow run --dry-run``: the job was planned, not run; ``report`` says what a
    restore would do, ``ok`` whether it would succeed."""

    def __init__(self, report: str, ok: bool) -> None:
        super().__init__(report)
        self.report = report
        self.ok = ok


def _periodic_checkpoint_options(cc: CheckpointConfig) -> CheckpointOptions:
    """How periodic checkpoints align (savepoints and final checkpoints are always aligned)."""
    if not cc.unaligned:
        return CHECKPOINT
    timeout_ms = cc.aligned_checkpoint_timeout_ms
    if timeout_ms == 0:
        return CheckpointOptions(alignment=Alignment.UNALIGNED)
    return CheckpointOptions(
        alignment=Alignment.ALIGNED_WITH_TIMEOUT, aligned_timeout_ms=timeout_ms
    )


def _dry_run_report(
    plan: JobPlan, mapping: StateMapping | None, restore_path: str | None
) -> tuple[str, bool]:
    graph = plan.graph.job_graph
    lines = [
        f"Dry run of job {plan.job_name!r}: {len(graph.vertices)} vertices, "
        f"{plan.graph.num_slots} slots, max parallelism {graph.max_parallelism}"
    ]
    if mapping is None:
        lines.append("No snapshot to restore from: every operator starts empty.")
        return "\n".join(lines), True
    lines.append(f"Restoring {mapping.snapshot} {mapping.checkpoint_id} from {restore_path}:")
    lines += [f"  {line}" for line in mapping.describe()]
    problems = mapping.problems(plan.allow_non_restored_state)
    lines += [f"Problem: {p}" for p in problems]
    lines.append("The restore would fail." if problems else "The restore would succeed.")
    return "\n".join(lines), not problems


def _started_from(storage_uri: str) -> tuple[str | None, CheckpointMetadata | None, str | None]:
    """The snapshot a job to resume was started from (``-s``), if it was and it still reads:
    (its path, its metadata, the URI its paths are relative to). The JobMaster restores it
    only when the job completed no checkpoint of its own."""
    storage = CheckpointStorage(storage_uri)
    data = with_storage_retries(
        lambda: storage.read_small_file(RESTORED_FROM_FILE), "read the restore path in", storage_uri
    )
    if not data:
        return None, None, None
    path = data.decode()
    try:
        root, metadata = _located(path)
    except (StorageConfigError, CorruptCheckpointError) as e:
        # needed only without a checkpoint of the job's own (CLAIM mode deletes it after one)
        log.info("The snapshot the job started from, %s, cannot be read any more: %s", path, e)
        return None, None, None
    return path, metadata, root


def _read_restore_point(path: str):
    try:
        root, metadata = _located(path)
        return metadata, root
    except (StorageConfigError, CorruptCheckpointError) as e:
        raise ConfigurationError(f"cannot restore from {path}: {e}") from e


def _located(path: str) -> tuple[str, CheckpointMetadata]:
    """``locate_snapshot``, waiting for storage that is briefly down: a job started from a
    savepoint on S3 while the S3 server restarted must not end for good where the restart
    strategy of a running job would have carried it through."""
    return with_storage_retries(lambda: locate_snapshot(path), "read the snapshot", path)
