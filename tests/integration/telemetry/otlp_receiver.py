"""A minimal OTLP/HTTP trace receiver on loopback: what a collector gets, decoded for assertions.

Workers export with the real OTLP exporter (protobuf over HTTP, ``POST /v1/traces``); this server
decodes each ``ExportTraceServiceRequest`` with OpenTelemetry's own protobuf classes and keeps the
spans as plain dicts.

Example::

    with OtlpReceiver.start() as receiver:
        env = {"LUNORA_OTEL_EXPORTER": "otlp", "LUNORA_OTEL_ENDPOINT": receiver.endpoint}
        ...
        spans = receiver.wait_for(lambda spans: len(spans) >= 3, timeout=30)
"""

from __future__ import annotations

import gzip
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [_value(v) for v in value.array_value.values]
    return getattr(value, kind) if kind else None


class OtlpReceiver:
    """``POST /v1/traces`` on 127.0.0.1:<free port>; ``spans`` holds what arrived."""

    def __init__(self) -> None:
        self.spans: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                request = ExportTraceServiceRequest()
                request.ParseFromString(body)
                receiver._add(request)
                payload = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: Any) -> None:  # quiet
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @classmethod
    def start(cls) -> OtlpReceiver:
        """Listen on a free loopback port."""
        receiver = cls()
        receiver._thread.start()
        return receiver

    @property
    def endpoint(self) -> str:
        """The base URL an exporter is given (it appends ``/v1/traces``)."""
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def _add(self, request: ExportTraceServiceRequest) -> None:
        with self._lock:
            for resource_spans in request.resource_spans:
                resource = {a.key: _value(a.value) for a in resource_spans.resource.attributes}
                for scope_spans in resource_spans.scope_spans:
                    for span in scope_spans.spans:
                        self.spans.append({
                            "name": span.name, "trace_id": span.trace_id.hex(), "span_id": span.span_id.hex(),
                            "parent_span_id": span.parent_span_id.hex() or None,
                            "attributes": {a.key: _value(a.value) for a in span.attributes},
                            "service": resource.get("service.name"), "status": span.status.code,
                        })

    def wait_for(self, done: Callable[[list[dict[str, Any]]], bool], timeout: float) -> list[dict[str, Any]]:
        """Poll until ``done(spans)`` holds; raise AssertionError with what arrived after ``timeout``."""
        deadline = time.monotonic() + timeout
        while True:
            with self._lock:
                spans = list(self.spans)
            if done(spans):
                return spans
            if time.monotonic() > deadline:
                raise AssertionError(f"spans never arrived; got {[(s['name'], s['service']) for s in spans]}")
            time.sleep(0.1)

    def stop(self) -> None:
        """Stop listening."""
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> OtlpReceiver:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
