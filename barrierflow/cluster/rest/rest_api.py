"""RestApi: answers one HTTP request (method, path, headers, body) with a ``Response``; the
routes of the REST API, the web UI's files and ``/metrics``. Knows nothing of sockets, so it is
tested without a server.

Read-only endpoints answer anyone when the server listens on a loopback address; else, and for
every request that changes the job (savepoint, stop, cancel), the job's secret is required in
``Authorization: Bearer <secret>``: 401 without it, 403 with a wrong one. The secret is in the
JobMaster's address file in the job's checkpoint directory, so whoever may read the job's
checkpoints may control it (as ``barrierflow cancel``).

**Threading:** ``handle`` is called from the server's request threads, concurrently; it reads
the ``JobStatusView`` (thread-safe) and reaches the JobMaster only through ``JobControl``,
whose methods put mail on the JobMaster's mailbox.
"""

from __future__ import annotations

import json
import re
import secrets
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from importlib import resources
from typing import Any, Protocol
from urllib.parse import parse_qs, urlsplit

from barrierflow.cluster.job_status_view import JobStatusView
from barrierflow.cluster.rest import flink_json
from barrierflow.cluster.rest.prometheus_metrics import metrics_registry, render
from barrierflow.protocol.checkpoint_barrier import SnapshotFormat

JSON_TYPE = "application/json; charset=utf-8"
MAX_SAVEPOINT_REQUESTS = 100  # remembered for their status requests
_STATIC_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
    ".png": "image/png",
}
_STATIC_NAME = re.compile(r"^[A-Za-z0-9_-]+\.[a-z]+$")


class JobControl(Protocol):
    """What the REST API may ask of the JobMaster; every method is safe from any thread."""

    def cancel(self) -> None: ...

    def trigger_savepoint(
        self, target_dir: str | None, snapshot_format: SnapshotFormat, stop: bool, drain: bool
    ) -> Future[str]: ...

    def is_secret(self, secret: str) -> bool: ...

    def rescale(
        self,
        parallelism: int | None,
        per_operator: Mapping[str, int] | None = None,
        reason: str = "asked for",
        trigger: str = "manual",
        per_vertex: Mapping[str, int] | None = None,
    ) -> Future[Any]: ...


class Headers(Protocol):
    """A request's headers: http.server's (an ``email.message.Message``), or a dict."""

    def get(self, name: str, /) -> str | None: ...


@dataclass(frozen=True)
class Response:
    status: int
    body: bytes
    content_type: str = JSON_TYPE
    headers: tuple[tuple[str, str], ...] = ()


def json_response(status: int, data: Any) -> Response:
    return Response(status, json.dumps(data).encode())


def _not_found(what: str) -> Response:
    return json_response(404, flink_json.error(f"{what} not found"))


Handler = Callable[["RestApi", re.Match, Mapping[str, list[str]], bytes], Response]
_ROUTES: list[tuple[str, re.Pattern, Handler, bool]] = []  # method, path, handler, changes job


def route(method: str, pattern: str, changes_job: bool = False) -> Callable[[Handler], Handler]:
    def register(handler: Handler) -> Handler:
        _ROUTES.append((method, re.compile(f"^{pattern}$"), handler, changes_job))
        return handler

    return register


class RestApi:
    def __init__(self, view: JobStatusView, control: JobControl, open_to_read: bool) -> None:
        """``open_to_read``: read-only endpoints need no secret (a loopback address)."""
        self._view = view
        self._control = control
        self._open_to_read = open_to_read
        self._registry = metrics_registry(view)
        self._lock = threading.Lock()
        self._savepoints: OrderedDict[str, Future[str]] = OrderedDict()
        self.job_id = view.snapshot().job_id

    def handle(self, method: str, target: str, headers: Headers, body: bytes = b"") -> Response:
        """One request; ``target`` is the request line's path with its query."""
        parts = urlsplit(target)
        path = parts.path.rstrip("/") or "/"
        query = parse_qs(parts.query)
        allowed = []
        for route_method, pattern, handler, changes_job in _ROUTES:
            match = pattern.match(path)
            if match is None:
                continue
            if route_method != method:
                allowed.append(route_method)
                continue
            refused = self._refuse(headers, changes_job)
            if refused is not None:
                return refused
            return handler(self, match, query, body)
        if allowed:
            return Response(
                405,
                json.dumps(flink_json.error(f"{method} is not allowed on {path}")).encode(),
                headers=(("Allow", ", ".join(sorted(set(allowed)))),),
            )
        return _not_found(f"{path}:")

    def _refuse(self, headers: Headers, changes_job: bool) -> Response | None:
        if not changes_job and self._open_to_read:
            return None
        authorization = headers.get("Authorization") or headers.get("authorization") or ""
        scheme, _, secret = authorization.partition(" ")
        if scheme.lower() != "bearer" or not secret.strip():
            return Response(
                401,
                json.dumps(
                    flink_json.error(
                        "this request needs the job's secret in an 'Authorization: Bearer "
                        "<secret>' header; the secret is in the job's address file "
                        "(_jobmaster.json in its checkpoint directory)"
                    )
                ).encode(),
                headers=(("WWW-Authenticate", 'Bearer realm="barrierflow"'),),
            )
        if not self._control.is_secret(secret.strip()):
            return json_response(
                403,
                flink_json.error(
                    "wrong secret for this job: take it from the address file of this job's "
                    "checkpoint directory (a restarted JobMaster has a new one)"
                ),
            )
        return None

    def _job(self, match: re.Match) -> bool:
        return match.group("job") == self.job_id

    # --- savepoints -----------------------------------------------------------------------------

    def _remember(self, future: Future[str]) -> str:
        request_id = secrets.token_hex(16)
        with self._lock:
            self._savepoints[request_id] = future
            while len(self._savepoints) > MAX_SAVEPOINT_REQUESTS:
                self._savepoints.popitem(last=False)
        return request_id

    def savepoint_request(self, body: bytes, stop: bool) -> Response:
        try:
            request = json.loads(body or b"{}")
            if not isinstance(request, dict):
                raise ValueError("the body must be a JSON object")
            target = request.get("target-directory", request.get("targetDirectory"))
            snapshot_format = SnapshotFormat(str(request.get("formatType", "CANONICAL")).lower())
        except ValueError as e:
            return json_response(
                400,
                flink_json.error(
                    f"bad savepoint request: {e}; expected JSON like "
                    '{"target-directory": "file:///savepoints", "formatType": "CANONICAL"}'
                ),
            )
        cancel_job = bool(request.get("cancel-job", False))
        drain = bool(request.get("drain", False))
        future = self._control.trigger_savepoint(
            target or None, snapshot_format, stop or cancel_job, drain
        )
        return json_response(202, {"request-id": self._remember(future)})

    def savepoint_status(self, request_id: str) -> Response:
        with self._lock:
            future = self._savepoints.get(request_id)
        if future is None:
            return _not_found(f"savepoint request {request_id}")
        if not future.done():
            return json_response(200, {"status": {"id": "IN_PROGRESS"}, "operation": None})
        error = future.exception()
        operation: dict[str, Any] = (
            {"location": future.result()}
            if error is None
            else {
                "failure-cause": {
                    "class": type(error).__name__,
                    "stack-trace": str(error),
                    "serialized-throwable": None,
                }
            }
        )
        return json_response(200, {"status": {"id": "COMPLETED"}, "operation": operation})

    # --- static files ---------------------------------------------------------------------------

    @staticmethod
    def static(name: str) -> Response:
        if not _STATIC_NAME.match(name):
            return _not_found(name)
        web = resources.files("barrierflow.cluster.rest").joinpath("web")
        file = web.joinpath(name)
        if not file.is_file():
            return _not_found(name)
        suffix = name[name.rindex(".") :]
        return Response(
            200,
            file.read_bytes(),
            _STATIC_TYPES.get(suffix, "application/octet-stream"),
            (("Cache-Control", "no-cache"),),
        )


# --- routes -----------------------------------------------------------------------------------

_JOB = r"/jobs/(?P<job>[0-9A-Za-z_-]+)"


@route("GET", "/")
def _index(api: RestApi, match: re.Match, query: Mapping, body: bytes) -> Response:
    return api.static("index.html")


@route("GET", r"/web/(?P<name>[^/]+)")
def _web(api: RestApi, match: re.Match, query: Mapping, body: bytes) -> Response:
    return api.static(match.group("name"))


@route("GET", "/metrics")
def _metrics(api: RestApi, match: re.Match, query: Mapping, body: bytes) -> Response:
    data, content_type = render(api._registry)
    return Response(200, data, content_type)


@route("GET", "/config")
def _config(api: RestApi, match: re.Match, query: Mapping, body: bytes) -> Response:
    return json_response(
        200, {"refresh-interval": 1000, "timezone-name": "UTC", "features": {"web-submit": False}}
    )


@route("GET", "/jobs")
def _jobs(api: RestApi, match: re.Match, query: Mapping, body: bytes) -> Response:
    job = api._view.snapshot()
    return json_response(200, {"jobs": [{"id": job.job_id, "status": job.state}]})


@route("GET", "/jobs/overview")
def _overview(api: RestApi, match: re.Match, query: Mapping, body: bytes) -> Response:
    return json_response(200, flink_json.jobs_overview(api._view.snapshot()))


def _job_route(method: str, suffix: str, changes_job: bool = False):
    """A route under ``/jobs/:jobid`` that answers 404 for another job's id."""

    def register(handler: Handler) -> Handler:
        def checked(api: RestApi, match: re.Match, query: Mapping, body: bytes) -> Response:
            if not api._job(match):
                return _not_found(f"job {match.group('job')}")
            return handler(api, match, query, body)

        route(method, _JOB + suffix, changes_job)(checked)
        return handler

    return register


@_job_route("GET", "")
def _job_details(api: RestApi, match: re.Match, query: Mapping, body: bytes) -> Response:
    return json_response(200, flink_json.job_details(api._view.snapshot()))


@_job_route("PATCH", "", changes_job=True)
def _job_patch(api: RestApi, match: re.Match, query: Mapping, body: bytes) -> Response:
    mode = query.get("mode", ["cancel"])[0]
    if mode != "cancel":
        return json_response(400, flink_json.error(f"unknown mode {mode!r}; only 'cancel'"))
    api._control.cancel()
    return json_response(202, {})


@_job_route("POST", "/cancel", changes_job=True)
def _job_cancel(api: RestApi, match: re.Match, query: Mapping, body: bytes) -> Response:
    api._control.cancel()
    return json_response(202, {})


@_job_route("POST", "/savepoints", changes_job=True)
def _savepoint(api: RestApi, match: re.Match, query: Mapping, body: bytes) -> Response:
    return api.savepoint_request(body, stop=False)


@_job_route("POST", "/stop", changes_job=True)
def _stop(api: RestApi, match: re.Match, query: Mapping, body: bytes) -> Response:
    return api.savepoint_request(body, stop=True)


@_job_route("GET", r"/savepoints/(?P<request>[0-9a-f]+)")
def _savepoint_status(api: RestApi, match: re.Match, query: Mapping, body: bytes) -> Response:
    return api.savepoint_status(match.group("request"))


@_job_route("GET", "/resource-requirements")
def _resource_requirements(api: RestApi, match: re.Match, query: Mapping, body: bytes) -> Response:
    return json_response(200, flink_json.resource_requirements(api._view.snapshot()))


@_job_route("PUT", "/resource-requirements", changes_job=True)
def _set_resource_requirements(
    api: RestApi, match: re.Match, query: Mapping, body: bytes
) -> Response:
    """Flink's body: per vertex id, ``{"parallelism": {"lowerBound": l, "upperBound": u}}``;
    the job is rescaled to each vertex's upper bound. Answers at once (202) with the
    rescale's id; ``GET /jobs/:id/rescales`` follows it."""
    try:
        asked = json.loads(body or b"{}")
        per_vertex = {v: int(r["parallelism"]["upperBound"]) for v, r in asked.items()}
    except (ValueError, TypeError, KeyError, AttributeError) as e:
        return json_response(
            400,
            flink_json.error(
                'expected {"<vertex id>": {"parallelism": {"lowerBound": n, "upperBound": m}}, '
                f"...}}: {e}"
            ),
        )
    known = {v.id for v in api._view.snapshot().vertices}
    unknown = sorted(set(per_vertex) - known)
    if unknown:
        return json_response(
            400, flink_json.error(f"no vertex {unknown}; vertices: {sorted(known)}")
        )
    future = api._control.rescale(None, reason="PUT resource-requirements", per_vertex=per_vertex)
    try:
        record = future.result(timeout=0.5)  # a refusal comes at once
    except TimeoutError:
        rescales = api._view.snapshot().rescales
        return json_response(202, {"rescale-id": rescales[-1].id if rescales else None})
    except Exception as e:  # noqa: BLE001 - the refusal, to the client
        return json_response(409, flink_json.error(str(e)))
    return json_response(200, {"rescale-id": record.id})


@_job_route("GET", "/rescales")
def _rescales(api: RestApi, match: re.Match, query: Mapping, body: bytes) -> Response:
    return json_response(200, flink_json.rescales(api._view.snapshot()))


@_job_route("GET", "/checkpoints")
def _checkpoints(api: RestApi, match: re.Match, query: Mapping, body: bytes) -> Response:
    return json_response(200, flink_json.checkpoints(api._view.snapshot()))


@_job_route("GET", "/checkpoints/config")
def _checkpoint_config(api: RestApi, match: re.Match, query: Mapping, body: bytes) -> Response:
    return json_response(200, flink_json.checkpoint_config(api._view.snapshot().settings))


@_job_route("GET", r"/checkpoints/details/(?P<cid>\d+)")
def _checkpoint_details(api: RestApi, match: re.Match, query: Mapping, body: bytes) -> Response:
    cid = int(match.group("cid"))
    details = flink_json.checkpoint_details(api._view.snapshot(), cid)
    return _not_found(f"checkpoint {cid}") if details is None else json_response(200, details)


@_job_route("GET", r"/checkpoints/details/(?P<cid>\d+)/subtasks/(?P<vertex>[^/]+)")
def _checkpoint_subtasks(api: RestApi, match: re.Match, query: Mapping, body: bytes) -> Response:
    cid, vertex = int(match.group("cid")), match.group("vertex")
    details = flink_json.checkpoint_subtasks(api._view.snapshot(), cid, vertex)
    if details is None:
        return _not_found(f"checkpoint {cid} of vertex {vertex}")
    return json_response(200, details)


@_job_route("GET", "/exceptions")
def _exceptions(api: RestApi, match: re.Match, query: Mapping, body: bytes) -> Response:
    return json_response(200, flink_json.exceptions(api._view.snapshot()))


@_job_route("GET", r"/vertices/(?P<vertex>[^/]+)/backpressure")
def _backpressure(api: RestApi, match: re.Match, query: Mapping, body: bytes) -> Response:
    job = api._view.snapshot()
    vertex = job.vertex(match.group("vertex"))
    if vertex is None:
        return _not_found(f"vertex {match.group('vertex')}")
    return json_response(200, flink_json.backpressure(job, vertex))
