"""The two shapes of the Sentry SDK's tracing API behind one seam for ``sentry_telemetry``.

sentry-sdk 2 sends transactions (``start_transaction``, ``continue_trace(headers, op=, name=)``,
``set_data``, status ``internal_error``); sentry-sdk 3 streams spans (``Scope.start_span``,
``generate_propagation_context``, ``set_attribute``, status ``error``) and has no transactions. Which
one a user passed is read from the module itself, so an upgrade of their SDK needs no change here.

Both join the run's trace on a fork of the current scope: joining a trace sets a propagation context,
and setting it on the worker's own scopes (what ``sentry_sdk.continue_trace`` does) would put whatever
the worker traces next, the next run included, into that run's trace. On sentry-sdk 2 the step's
transaction is also entered on the current scope, so spans the step's own code starts (an HTTP
integration's) nest under it; on sentry-sdk 3 its span is active on the fork only, and they do not.
"""

from __future__ import annotations

import uuid
from typing import Any, Protocol


class StepSpan(Protocol):
    """One step's span (or transaction), open between ``step_started`` and ``step_finished``."""

    def rename(self, name: str) -> None:
        """Name the span, once the step knows what it is (the model it called)."""

    def set(self, key: str, value: Any) -> None:
        """Set one attribute (``set_data`` on sentry-sdk 2)."""

    def end(self, error: Exception | None) -> None:
        """Finish the span; with ``error`` it fails and ``error`` goes to ``capture_exception``."""


class SentrySpans(Protocol):
    """What ``sentry_telemetry`` needs of the SDK: a run's root and its steps' spans."""

    def run_root(self, name: str, attributes: dict[str, Any]) -> dict[str, str]:
        """Record the run's root span; its ``sentry-trace`` / ``baggage`` headers, for the steps."""

    def step(self, trace: dict[str, str], op: str, name: str, attributes: dict[str, Any]) -> StepSpan:
        """Open a step's span in the trace ``trace`` (the run root's headers) carries."""


def sentry_spans(sdk: Any) -> SentrySpans:
    """The adapter for the SDK module ``sdk``: transactions on sentry-sdk 2, spans on sentry-sdk 3."""
    return _Transactions(sdk) if hasattr(sdk, "start_transaction") else _StreamedSpans(sdk)


class _Transaction:
    def __init__(self, sdk: Any, tx: Any) -> None:
        self._sdk = sdk
        self._tx = tx

    def rename(self, name: str) -> None:
        self._tx.name = name

    def set(self, key: str, value: Any) -> None:
        self._tx.set_data(key, value)

    def end(self, error: Exception | None) -> None:
        try:
            self._tx.set_status("ok" if error is None else "internal_error")
            if error is not None:
                self._sdk.capture_exception(error)
        finally:
            self._tx.__exit__(None, None, None)


class _Transactions:
    """sentry-sdk 2: each step is a transaction continuing the run's trace."""

    def __init__(self, sdk: Any) -> None:
        self._sdk = sdk

    def run_root(self, name: str, attributes: dict[str, Any]) -> dict[str, str]:
        # A trace id of its own: left out, sentry-sdk 2 takes the scope's, and every run this process
        # starts would share one trace.
        op, trace_id = attributes["sentry.op"], uuid.uuid4().hex
        with self._sdk.start_transaction(op=op, name=name, trace_id=trace_id) as tx:
            for key, value in attributes.items():
                if key != "sentry.op":
                    tx.set_data(key, value)
            carrier = {"sentry-trace": self._sdk.get_traceparent(), "baggage": self._sdk.get_baggage()}
        return {key: value for key, value in carrier.items() if value}

    def step(self, trace: dict[str, str], op: str, name: str, attributes: dict[str, Any]) -> StepSpan:
        # Continued on a fork: ``sentry_sdk.continue_trace`` would set the isolation scope's trace too.
        continued = self._sdk.get_current_scope().fork().continue_trace(dict(trace), op=op, name=name)
        tx = self._sdk.start_transaction(continued)
        # Entered so that what the step itself traces (an integration's HTTP span) nests under it.
        tx.__enter__()
        for key, value in attributes.items():
            tx.set_data(key, value)
        return _Transaction(self._sdk, tx)


class _StreamedSpan:
    def __init__(self, scope: Any, span: Any) -> None:
        self._scope = scope
        self._span = span

    def rename(self, name: str) -> None:
        self._span.name = name

    def set(self, key: str, value: Any) -> None:
        self._span.set_attribute(key, value)

    def end(self, error: Exception | None) -> None:
        try:
            self._span.status = "ok" if error is None else "error"
            if error is not None:
                # On the step's scope, where the span is active: the event joins the step's trace.
                self._scope.capture_exception(error)
        finally:
            self._span.end()


class _StreamedSpans:
    """sentry-sdk 3: each step is a segment span continuing the run's trace, on a scope of its own."""

    def __init__(self, sdk: Any) -> None:
        self._sdk = sdk

    def run_root(self, name: str, attributes: dict[str, Any]) -> dict[str, str]:
        scope = self._sdk.get_current_scope().fork()
        scope.set_new_propagation_context()  # a run is a trace of its own, whatever the caller traces
        span = scope.start_span(name, attributes, None, True)
        try:
            baggage = scope.get_baggage()
            carrier = {"sentry-trace": scope.get_traceparent(),
                       "baggage": None if baggage is None else baggage.serialize()}
        finally:
            span.end()
        return {key: value for key, value in carrier.items() if value}

    def step(self, trace: dict[str, str], op: str, name: str, attributes: dict[str, Any]) -> StepSpan:
        scope = self._sdk.get_current_scope().fork()
        if trace:
            scope.generate_propagation_context(dict(trace))
        else:
            scope.set_new_propagation_context()
        return _StreamedSpan(scope, scope.start_span(name, {"sentry.op": op, **attributes}, None, True))
