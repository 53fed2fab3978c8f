"""``flush_owned``: the suite's only way to FLUSHDB refuses any server this process did not start."""

from __future__ import annotations

import pytest
import redis
from private_redis import flush_owned


@pytest.mark.parametrize("url", ["redis://127.0.0.1:6379/0", "redis://127.0.0.1:6379/15", "redis://localhost:1/0"])
def test_a_redis_the_test_did_not_start_is_never_flushed(url: str) -> None:
    client = redis.Redis.from_url(url)
    with pytest.raises(AssertionError, match="refusing FLUSHDB"):
        flush_owned(client)  # refused before any command is sent
    client.close()
