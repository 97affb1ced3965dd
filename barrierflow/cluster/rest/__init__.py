"""Internal: the JobMaster's REST API, web UI and metrics, public as HTTP (docs/public-api.md).

The JobMaster's REST API (Flink's shape), web UI and Prometheus metrics.

``server``: the HTTP server; ``rest_api``: the routes; ``flink_json``: the JSON builders;
``prometheus_metrics``: ``/metrics``; ``web/``: the page's static files. All of them read the
job through a ``JobStatusView`` (``barrierflow/cluster/job_status_view.py``).
"""
