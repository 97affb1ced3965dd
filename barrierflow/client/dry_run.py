"""``barrierflow run --dry-run``: the job planned and not run, and a report of what its restore
would do; ``barrierflow info``: the job declared, not even planned. Performs no I/O.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from barrierflow.client.pipeline import Pipeline
    from barrierflow.cluster.job_plan import JobPlan
    from barrierflow.coordination.state_mapping import StateMapping


class DryRunFinished(Exception):
    """The job was planned, not run; ``report`` says what a restore would do, ``ok`` whether
    it would succeed. Raised out of ``execute()`` to the command, which prints the report."""

    def __init__(self, report: str, ok: bool) -> None:
        super().__init__(report)
        self.report = report
        self.ok = ok


class PlanRequested(Exception):
    """``barrierflow info``: the job file declared ``pipeline`` and called ``execute()``;
    nothing was planned or run. The command prints the job's plan."""

    def __init__(self, pipeline: Pipeline) -> None:
        super().__init__(f"the plan of job {pipeline.job_name!r}")
        self.pipeline = pipeline


def dry_run_report(
    plan: JobPlan, mapping: StateMapping | None, restore_path: str | None
) -> tuple[str, bool]:
    """(the report, whether the restore would succeed)."""
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
