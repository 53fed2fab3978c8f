"""``workers.pools``: which Celery pools a worker runs steps on. A real worker started on another
pool refusing to start is ``tests/integration/workers/test_worker_pools.py``'s."""

from __future__ import annotations

import pytest
from celery.concurrency.prefork import TaskPool as PreforkPool
from celery.concurrency.solo import TaskPool as SoloPool
from celery.concurrency.thread import TaskPool as ThreadPool

from lunora_jobs.errors import ConfigurationError, UnsupportedPoolError
from workers.pools import check_pool


class TunedSolo(SoloPool):  # type: ignore[misc]
    """A custom pool that keeps the solo pool's execution (and so its time limits)."""


class Bespoke(ThreadPool):  # type: ignore[misc]
    """A custom pool derived from neither."""


@pytest.mark.parametrize("pool", ["prefork", "processes", "solo", PreforkPool, SoloPool, TunedSolo])
def test_prefork_solo_and_their_subclasses_are_accepted(pool: str | type) -> None:
    check_pool(pool)


@pytest.mark.parametrize("pool", ["threads", "gevent", "eventlet", ThreadPool])
def test_a_pool_that_would_not_keep_the_time_limits_is_refused_saying_which_to_use(pool: str | type) -> None:
    with pytest.raises(UnsupportedPoolError) as raised:
        check_pool(pool)
    message = str(raised.value)
    assert message.startswith(f"--pool {pool if isinstance(pool, str) else 'threads'}: ")
    assert "Start the worker with --pool prefork (the default) or --pool solo." in message
    assert isinstance(raised.value, ConfigurationError)


def test_a_custom_pool_is_named_by_its_path() -> None:
    with pytest.raises(UnsupportedPoolError, match=f"^--pool {__name__}:Bespoke: "):
        check_pool(Bespoke)
