"""``engine/backoff.py``: full-jitter exponential waits, the server's Retry-After, terminal 4xx."""

from __future__ import annotations

from datetime import UTC, datetime
from email.utils import format_datetime
from typing import Any

from lunora_jobs.engine.backoff import CAP_MS, MAX_RETRY_AFTER_MS, retry_after_ms, retry_delay_ms, terminal


class _Response:
    def __init__(self, status: int, headers: dict[str, str]) -> None:
        self.status_code = status
        self.headers = headers


class _HttpError(Exception):
    """Shaped like an SDK's status error: ``status_code`` and the ``response`` with its headers."""

    def __init__(self, status: int, headers: dict[str, str] | None = None) -> None:
        super().__init__(f"HTTP {status}")
        self.status_code = status
        self.response = _Response(status, headers or {})


def _top(low: float, high: float) -> float:
    return high


def test_full_jitter_doubles_its_ceiling_per_attempt_up_to_the_cap() -> None:
    error = RuntimeError("flaky tool")
    assert [retry_delay_ms(error, n, rng=_top) for n in (1, 2, 3, 4)] == [1_000, 2_000, 4_000, 8_000]
    assert retry_delay_ms(error, 30, rng=_top) == CAP_MS
    draws: list[tuple[float, float]] = []

    def record(low: float, high: float) -> float:
        draws.append((low, high))
        return (low + high) / 2

    assert retry_delay_ms(error, 3, rng=record) == 2_000
    assert draws == [(0, 4_000)]  # full jitter: anywhere from no wait to the ceiling


def test_retry_after_in_seconds_milliseconds_or_a_date_is_what_the_wait_is() -> None:
    assert retry_delay_ms(_HttpError(429, {"retry-after": "3"}), 1) == 3_000
    assert retry_delay_ms(_HttpError(429, {"retry-after-ms": "250"}), 4) == 250
    when = format_datetime(datetime.fromtimestamp(1_000_010, tz=UTC), usegmt=True)
    assert retry_after_ms(_HttpError(503, {"retry-after": when}), now_s=lambda: 1_000_000) == 10_000
    assert retry_delay_ms(_HttpError(429, {"retry-after": "86400"}), 1) == MAX_RETRY_AFTER_MS
    own: Any = RuntimeError("busy")
    own.retry_after = 1.5
    assert retry_after_ms(own) == 1_500
    assert retry_after_ms(_HttpError(429, {"retry-after": "soon"})) is None
    assert retry_after_ms(RuntimeError("no response")) is None


def test_client_errors_are_terminal_except_timeouts_conflicts_and_rate_limits() -> None:
    assert [terminal(_HttpError(s)) for s in (400, 401, 403, 404, 422)] == [True] * 5
    assert [terminal(_HttpError(s)) for s in (408, 409, 425, 429, 500, 502, 503)] == [False] * 7
    assert not terminal(TimeoutError("read timed out")) and not terminal(ConnectionError("reset"))
