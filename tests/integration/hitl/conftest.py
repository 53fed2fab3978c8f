"""The ``fleet`` fixture: Redis db 9 broker, a fresh PostgreSQL database, workers started on demand."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hitl_fleet import HitlFleet


@pytest.fixture
def fleet(pg_url: str, monkeypatch: Any) -> Iterator[HitlFleet]:
    """A fleet over this test's own database; every worker it started is stopped afterwards."""
    fleet = HitlFleet(pg_url, monkeypatch)
    try:
        yield fleet
    finally:
        fleet.close()
