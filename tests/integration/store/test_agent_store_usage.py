"""Contract: the token-usage ledger — quota over the inclusive UTC day, half-open windows."""

from __future__ import annotations

import pytest
from agent_store_support import START, FakeClock

from lunora_jobs.store import AgentStore, UsageEntry

pytestmark = pytest.mark.integration

DAY = 86_400_000


def at(ms: int, tokens: int, actor: str = "alice") -> UsageEntry:
    return UsageEntry(
        actor=actor,
        model="m",
        input_tokens=tokens,
        output_tokens=tokens * 10,
        cache_read_tokens=tokens,
        cache_write_tokens=1,
        created_at=ms,
    )


def test_quota_today_covers_the_inclusive_utc_day(store: AgentStore, clock: FakeClock) -> None:
    for ms, tokens in ((START - 1, 1), (START, 2), (START + DAY - 1, 4), (START + DAY, 8)):
        store.record_usage(at(ms, tokens))
    store.record_usage(at(START + 5, 1000, actor="bob"))
    store.record_usage(at(START + 5, 1000, actor="ALICE"))  # identities are case-sensitive
    clock.now = START
    assert store.quota_today("alice") == (2 + 4) * 11
    clock.now = START + DAY - 1
    assert store.quota_today("alice") == (2 + 4) * 11
    clock.now = START + DAY
    assert store.quota_today("alice") == 8 * 11
    clock.now = START - 1
    assert store.quota_today("alice") == 1 * 11
    assert store.quota_today("nobody") == 0


def test_usage_between_is_half_open_and_reports_cache_separately(store: AgentStore) -> None:
    for ms, tokens in ((START, 1), (START + 10, 2), (START + 20, 4)):
        store.record_usage(at(ms, tokens))
    totals = store.usage_between("alice", START, START + 20)
    assert (
        totals.input_tokens,
        totals.output_tokens,
        totals.cache_read_tokens,
        totals.cache_write_tokens,
    ) == (3, 30, 3, 2)
    assert totals.total == 33
    assert store.usage_between("alice", START + 21, START + 99).total == 0


def test_record_usage_defaults_created_at_to_the_clock(store: AgentStore, clock: FakeClock) -> None:
    store.record_usage(UsageEntry(actor="alice", model="m", input_tokens=3, output_tokens=4))
    assert store.usage_between("alice", clock.now, clock.now + 1).total == 7
