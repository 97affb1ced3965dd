"""``moto_server`` whose recorder also keeps the bodies of chunked uploads (moto records only
bodies with a ``Content-Length``; pyarrow's S3 client streams its uploads chunked), so that a
restarted server can be given every object again (``s3.py``). Run as
``python -m tests.servers.moto_recording_server -H HOST -p PORT``.
"""

from __future__ import annotations

import io
from typing import Any

from moto.moto_api._internal.recorder.models import Recorder
from moto.server import main

_record = Recorder._record_request


def _record_request(self: Recorder, request: Any, body: bytes | None = None) -> None:
    chunked = request.headers.get("Transfer-Encoding", "").lower() == "chunked"
    if body is None and chunked and "Content-Length" not in request.headers:
        body = request.environ["wsgi.input"].read()
        request.environ["wsgi.input"] = io.BytesIO(body)
    _record(self, request, body)


Recorder._record_request = _record_request

if __name__ == "__main__":
    main()
