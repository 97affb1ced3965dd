"""Planning: a pipeline turned into the JobPlan a JobMaster runs, with every setting checked
before Spark starts (a bad setting fails in milliseconds, not after a cluster round trip).

**I/O:** sets up this process's file systems (``s3.*``), checks that the job's checkpoint
directory is writable and records the ``-s`` path in it, and reads the snapshot to restore;
storage that is briefly unreachable is waited for.
"""

from __future__ import annotations

import functools
import logging
import os
import tempfile
import uuid
from collections.abc import Mapping

from barrierflow.checkpoint import file_systems
from barrierflow.checkpoint.storage import CheckpointDirectory, job_root_uri
from barrierflow.checkpoint.storage_layout import RESTORED_FROM_FILE
from barrierflow.checkpoint.storage_retry import with_storage_retries
from barrierflow.client.pipeline import Checkpointing, Options, Pipeline
from barrierflow.client.restore_points import read_restore_point, started_from
from barrierflow.cluster.job_plan import JobPlan
from barrierflow.cluster.rest.server import RestConfig
from barrierflow.cluster.restart_strategy import from_configuration as restart_from_configuration
from barrierflow.cluster.scaling.autoscaler_settings import AutoscalerSettings
from barrierflow.coordination.checkpoint_coordinator import CoordinatorConfig
from barrierflow.errors import ConfigurationError
from barrierflow.graph.execution_graph import ExecutionGraph, build_execution_graph
from barrierflow.graph.job_graph import build_job_graph
from barrierflow.protocol.checkpoint_barrier import CHECKPOINT, Alignment, CheckpointOptions
from barrierflow.runtime.network import channel_faults
from barrierflow.runtime.network.buffer_debloater import MIN_BUFFER_SIZE, DebloatSettings
from barrierflow.runtime.task_descriptor import TaskConfig
from barrierflow.state.backends import StateBackendConfig
from barrierflow.state.backends.registry import backend_kind

log = logging.getLogger("barrierflow")


def plan_job(pipeline: Pipeline) -> JobPlan:
    """Translates and checks ``pipeline``; no Spark involved. Its steps, in order:

    1. the graphs (StreamGraph, JobGraph, ExecutionGraph) and the job's id;
    2. whether it checkpoints (not in BATCH mode), and where: the default directory if no
       storage was set;
    3. the file systems (``s3.*``), before anything opens storage;
    4. the job's directory: writable, and the ``-s`` path recorded in it;
    5. the snapshot to restore, read;
    6. the configurations of the coordinator, the tasks and the REST server.
    """
    if not isinstance(pipeline.job_name, str) or not pipeline.job_name:
        raise ConfigurationError(f"execute() needs a job name, got {pipeline.job_name!r}")
    # 1. graphs
    batch = pipeline.is_batch()
    chaining = pipeline.configuration.get("pipeline.operator-chaining.enabled")
    graph = build_execution_graph(build_job_graph(pipeline.stream_graph(), chaining))
    job_id = pipeline.resume_job_id or pipeline.job_id or uuid.uuid4().hex
    resume = pipeline.resume_job_id is not None or pipeline.take_over
    # 2. checkpointing
    cc = pipeline.checkpointing
    checkpointing = cc.enabled and not batch
    if batch and cc.enabled:
        log.info("Job %s runs in BATCH mode: no checkpoints are taken", pipeline.job_name)
    if pipeline.resume_job_id and (pipeline.restore_path or not checkpointing):
        raise ConfigurationError(
            f"resuming job {job_id} needs checkpointing enabled, and no restore path: it "
            "restores the job's own latest checkpoint"
        )
    storage = cc.storage
    if checkpointing and not storage:
        storage = _default_storage()
    # 3. s3.* settings for this process (the JobMaster, restores) and, through TaskConfig,
    # for every executor
    fs_settings = file_systems.settings_from(pipeline.configuration)
    file_systems.initialize(fs_settings)
    # 4. the job's directory; also without checkpointing: the command line finds the job there
    storage_uri = job_root_uri(storage, job_id) if storage else None
    if storage_uri is not None:
        _check_job_directory(storage_uri, None if resume else pipeline.restore_path)
    if checkpointing:
        cc.check_unaligned()
    # 5. the snapshot to restore
    restore_path = pipeline.restore_path
    restore_from = restore_root = None
    if resume and storage_uri:
        restore_path, restore_from, restore_root = started_from(storage_uri)
    elif restore_path:
        restore_from, restore_root = read_restore_point(restore_path)
    # 6. configurations
    conf = pipeline.configuration
    reactive = _reactive_stabilization_s(conf, checkpointing)
    if reactive is not None:
        _check_rescalable(graph)
    autoscaler = _autoscaler_settings(conf, checkpointing, reactive is not None)
    return JobPlan(
        job_id=job_id,
        job_name=pipeline.job_name,
        graph=graph,
        task_config=_task_config(pipeline, checkpointing, batch, storage_uri, fs_settings),
        coordinator_config=_coordinator_config(cc, checkpointing),
        restart_strategy=pipeline.restart_strategy
        or restart_from_configuration(conf, checkpointing),
        restore_from=restore_from,
        restore_root_uri=restore_root,
        restore_path=restore_path,
        retain_on_cancel=cc.retain_on_cancel,
        resume=resume,
        claim_restored=pipeline.claim_restored,
        allow_non_restored_state=pipeline.allow_non_restored_state,
        savepoint_dir=cc.savepoint_dir,
        rest=RestConfig(
            conf.get("rest.address"),
            conf.get("rest.port"),
            port_is_default=not conf.contains("rest.port"),
        ),
        registry_dir=conf.get("job-registry.dir"),
        regraph=functools.partial(_graph_at, pipeline),
        max_identical_failures=conf.get("restart-strategy.max-identical-failures"),
        reactive_stabilization_s=reactive,
        autoscaler=autoscaler,
    )


def _autoscaler_settings(
    conf: Options, checkpointing: bool, reactive: bool
) -> AutoscalerSettings | None:
    """The autoscaler's settings, checked, or None when it is off."""
    if not conf.get("job.autoscaler.enabled"):
        return None
    if reactive:
        raise ConfigurationError(
            "job.autoscaler.enabled and scheduler-mode: reactive both set the job's "
            "parallelism: choose one"
        )
    if not checkpointing:
        raise ConfigurationError(
            "job.autoscaler.enabled rescales from a checkpoint, and this job takes none: "
            "enable checkpointing (execution.checkpointing.interval)"
        )

    def seconds(key: str) -> float:
        return conf.get("job.autoscaler." + key) / 1000

    return AutoscalerSettings(
        target_utilization=conf.get("job.autoscaler.target.utilization"),
        utilization_boundary=conf.get("job.autoscaler.target.utilization.boundary"),
        metrics_window_s=seconds("metrics.window"),
        stabilization_s=seconds("stabilization.interval"),
        scale_down_max_factor=conf.get("job.autoscaler.scale-down.max-factor"),
        scale_up_grace_s=seconds("scale-up.grace-period"),
        catch_up_s=seconds("catch-up.duration"),
        restart_time_s=seconds("restart.time"),
        vertex_max_parallelism=conf.get("job.autoscaler.vertex.max-parallelism"),
    ).check()


def _check_rescalable(graph: ExecutionGraph) -> None:
    """Reactive mode runs the job at the parallelism the slots allow: refused for a job with a
    vertex that cannot change its parallelism."""
    for vertex in graph.job_graph.vertices:
        if vertex.fixed_parallelism is not None:
            raise ConfigurationError(
                "scheduler-mode: reactive changes the job's parallelism with the cluster's "
                f"task slots, and this job cannot run at another: {vertex.fixed_parallelism}"
            )


def _reactive_stabilization_s(conf: Options, checkpointing: bool) -> float | None:
    """Reactive mode's stabilization time, or None when the job does not run in it."""
    if conf.get("scheduler-mode") != "reactive":
        return None
    if not checkpointing:
        raise ConfigurationError(
            "scheduler-mode: reactive follows the cluster by restoring the job's latest "
            "checkpoint at another parallelism, and this job takes no checkpoints: enable "
            "checkpointing (execution.checkpointing.interval), or run it without reactive mode"
        )
    return conf.get("jobmanager.adaptive-scheduler.resource-stabilization-timeout") / 1000


def _graph_at(
    pipeline: Pipeline, parallelism: int | None, parallelism_of: Mapping[str, int]
) -> ExecutionGraph:
    """The job's graph at another parallelism (a rescale): its default ``parallelism`` and
    per-operator ``parallelism_of`` over the program's; a ConfigurationError if the program
    cannot run so (above the max parallelism, a forward() between two parallelisms)."""
    return build_execution_graph(
        build_job_graph(
            pipeline.stream_graph(parallelism, parallelism_of),
            pipeline.configuration.get("pipeline.operator-chaining.enabled"),
        )
    )


def _task_config(
    pipeline: Pipeline,
    checkpointing: bool,
    batch: bool,
    storage_uri: str | None,
    fs_settings: file_systems.FileSystemSettings,
) -> TaskConfig:
    cc, conf = pipeline.checkpointing, pipeline.configuration
    return TaskConfig(
        buffer_size=pipeline.buffer_size,
        buffer_timeout_s=pipeline.buffer_timeout_ms / 1000,
        initial_credit=4,
        checkpointing=checkpointing,
        exactly_once=cc.exactly_once,
        storage_uri=storage_uri,
        file_systems=fs_settings,
        inline_threshold=cc.data_inline_threshold_bytes,
        write_buffer_size=cc.write_buffer_size,
        max_parallelism=pipeline.max_parallelism,
        state_backend=state_backend_config(pipeline),
        unaligned_checkpoints=checkpointing and cc.unaligned,
        aligned_checkpoint_timeout_ms=cc.aligned_checkpoint_timeout_ms,
        # BATCH: the watermark jumps to the end of time once the input ended, so that no
        # record is late and every window and timer fires once, with all its records
        auto_watermark_interval_ms=0 if batch else conf.get("pipeline.auto-watermark-interval"),
        job_parameters=conf.get("pipeline.global-job-parameters"),
        channel_faults=channel_faults.installed(),
        buffer_debloat=buffer_debloat_settings(conf, pipeline.buffer_size),
    )


def buffer_debloat_settings(conf: Options, buffer_size: int) -> DebloatSettings | None:
    """Flink's ``taskmanager.network.memory.buffer-debloat.*`` as the tasks' settings; None
    when debloating is off (Flink's default). Buffers never grow past ``buffer_size``."""
    key = "taskmanager.network.memory.buffer-debloat."
    if not conf.get(key + "enabled"):
        return None
    return DebloatSettings(
        target_ms=conf.get(key + "target"),
        period_ms=conf.get(key + "period"),
        samples=conf.get(key + "samples"),
        threshold_percentages=conf.get(key + "threshold-percentages"),
        max_size=buffer_size,
        min_size=min(MIN_BUFFER_SIZE, buffer_size),
    )


def state_backend_config(pipeline: Pipeline) -> StateBackendConfig:
    """What every subtask's backend is: the declared kind, and the kind's options set in the
    configuration or by the backend object (which win); the others take their defaults.
    ``execution.checkpointing.incremental`` applies to a backend set in code too, unless that
    one says otherwise."""
    declared, conf = pipeline.state_backend, pipeline.configuration
    kind = backend_kind(declared.kind)
    if not kind.incremental_checkpoints:
        incremental = False  # a kind that always takes full snapshots (hashmap, as in Flink)
    elif declared.incremental is not None:
        incremental = declared.incremental
    else:
        incremental = conf.get("execution.checkpointing.incremental")
    configured = {o.key: conf.get(o.key) for o in kind.options if conf.contains(o.key)}
    return StateBackendConfig(
        kind=kind.name,
        local_root=(declared.local_dirs or (conf.get("taskmanager.state.local.root-dirs"),))[0],
        incremental=incremental,
        local_recovery=conf.get("execution.state-recovery.from-local"),
        options=tuple({**configured, **dict(declared.options)}.items()),
        leader_epoch=pipeline.leader_epoch,
    )


def _default_storage() -> str:
    """Flink keeps the checkpoints of a job without checkpoint storage in the JobManager's
    memory; barrierflow has no such storage, so it uses a local directory and says where."""
    default = os.path.join(tempfile.gettempdir(), "barrierflow", "checkpoints")
    log.info(
        "Checkpointing is enabled and no checkpoint storage is set: checkpoints go to "
        "%s (set_checkpoint_storage() or --checkpoint-dir to choose)",
        default,
    )
    return f"file://{default}"


def _check_job_directory(storage_uri: str, restore_path: str | None) -> None:
    """A StorageConfigError if the job's directory is not writable; retried while the storage
    is unreachable. ``restore_path`` is recorded as soon as the directory is: a driver killed
    before the job's first checkpoint leaves nothing else for ``run --resume`` to restore."""
    storage = CheckpointDirectory(storage_uri)
    with_storage_retries(storage.check_writable, "write to", storage_uri)
    if restore_path:
        data = restore_path.encode()
        with_storage_retries(
            lambda: storage.write_small_file(RESTORED_FROM_FILE, data),
            "record the restore path in",
            storage_uri,
        )


def _coordinator_config(cc: Checkpointing, checkpointing: bool) -> CoordinatorConfig:
    return CoordinatorConfig(
        interval_s=cc.interval_ms / 1000 if checkpointing else None,
        timeout_s=cc.timeout_ms / 1000,
        min_pause_s=cc.min_pause_ms / 1000,
        max_concurrent=cc.max_concurrent,
        tolerable_failures=cc.tolerable_failures,
        num_retained=cc.num_retained,
        checkpoints_after_tasks_finish=cc.checkpoints_after_tasks_finish,
        checkpoint_options=_periodic_checkpoint_options(cc),
    )


def _periodic_checkpoint_options(cc: Checkpointing) -> CheckpointOptions:
    """How periodic checkpoints align (savepoints and final checkpoints are always aligned)."""
    if not cc.unaligned:
        return CHECKPOINT
    timeout_ms = cc.aligned_checkpoint_timeout_ms
    if timeout_ms == 0:
        return CheckpointOptions(alignment=Alignment.UNALIGNED)
    return CheckpointOptions(
        alignment=Alignment.ALIGNED_WITH_TIMEOUT, aligned_timeout_ms=timeout_ms
    )
