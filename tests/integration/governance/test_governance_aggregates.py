"""The governance read-model's sums equal a brute-force fold over the ledger's rows, on every store.

A generated usage history (seeded, so a failure replays) spans three UTC days with rows on and
around each midnight, rows without an actor / tenant / agent, priced, provider-costed and unpriced
models. The SQL stores answer with one GROUP BY; the reference reads the raw rows back and adds
them up in Python.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
import sqlalchemy as sa
from governance_stores import MIDNIGHT

from lunora_jobs.governance import DAY_MS, GROUPS, UsageFilter, UsageGroup
from lunora_jobs.store.base import AgentStore
from lunora_jobs.store.records import UsageEntry
from lunora_jobs.store.schema import token_usage

pytestmark = pytest.mark.integration

ACTORS = ["alice", "bob", "ALICE", None]
TENANTS = ["acme", "globex", None]
AGENTS = ["support", "billing", None]
MODELS = ["gpt-4o-mini", "my-local-model", "openrouter/some-model", None]


def _history(seed: int, n: int = 240) -> list[UsageEntry]:
    rnd = random.Random(seed)
    edges = [MIDNIGHT + d * DAY_MS + off for d in range(3) for off in (-1, 0, 1)]
    out = []
    for _ in range(n):
        at = rnd.choice(edges) if rnd.random() < 0.3 else MIDNIGHT - DAY_MS // 2 + rnd.randrange(3 * DAY_MS)
        model = rnd.choice(MODELS)
        out.append(UsageEntry(
            actor=rnd.choice(ACTORS), tenant=rnd.choice(TENANTS), agent=rnd.choice(AGENTS), model=model,
            input_tokens=rnd.randrange(0, 5000), output_tokens=rnd.randrange(0, 2000),
            cache_read_tokens=rnd.randrange(0, 100), cache_write_tokens=rnd.randrange(0, 50),
            cost_usd=round(rnd.random(), 6) if model == "openrouter/some-model" and rnd.random() < 0.7
            else None,
            created_at=at,
        ))
    return out


def _stored(store: Any) -> list[dict[str, Any]]:
    """The ledger's rows as written (costs filled in by the store), read back without any SUM."""
    engine = getattr(store, "engine", None)
    if engine is None:
        return [vars_of(e) for e in store._usage]
    with engine.connect() as conn:
        return [dict(r) for r in conn.execute(sa.select(token_usage)).mappings()]


def vars_of(entry: UsageEntry) -> dict[str, Any]:
    return {name: getattr(entry, name) for name in entry.__dataclass_fields__}


def _brute(rows: list[dict[str, Any]], group_by: str | None, start: int, end: int,
           where: UsageFilter) -> dict[Any, UsageGroup]:
    out: dict[Any, list[Any]] = {}
    for r in rows:
        if not start <= r["created_at"] < end:
            continue
        if any(v is not None and r[k] != v for k, v in vars_of_filter(where)):
            continue
        key = None if group_by is None else (
            r["created_at"] // DAY_MS * DAY_MS if group_by == "day" else r[group_by])
        acc = out.setdefault(key, [0, 0, 0, 0, 0, [], 0])
        acc[0] += 1
        acc[1] += r["input_tokens"]
        acc[2] += r["output_tokens"]
        acc[3] += r["cache_read_tokens"]
        acc[4] += r["cache_write_tokens"]
        if r["cost_usd"] is None:
            acc[6] += 1
        else:
            acc[5].append(r["cost_usd"])
    return {k: UsageGroup(k, a[0], a[1], a[2], a[3], a[4], sum(a[5]) if a[5] else None, a[6])
            for k, a in out.items()}


def vars_of_filter(where: UsageFilter) -> list[tuple[str, str | None]]:
    return [("actor", where.actor), ("tenant", where.tenant), ("agent", where.agent), ("model", where.model)]


def _same(got: list[UsageGroup], want: dict[Any, UsageGroup]) -> None:
    assert [g.key for g in got] == sorted(want, key=lambda k: (k is not None, k if k is not None else ""))
    for g in got:
        w = want[g.key]
        assert (g.rows, g.input_tokens, g.output_tokens, g.cache_read_tokens, g.cache_write_tokens,
                g.unpriced_rows) == (w.rows, w.input_tokens, w.output_tokens, w.cache_read_tokens,
                                     w.cache_write_tokens, w.unpriced_rows), g.key
        if w.cost_usd is None:
            assert g.cost_usd is None, g.key  # no figure, never 0
        else:
            assert g.cost_usd == pytest.approx(w.cost_usd, rel=1e-9, abs=1e-12), g.key


def test_every_grouping_and_filter_equals_a_brute_force_sum(store: AgentStore) -> None:
    for entry in _history(seed=17):
        store.record_usage(entry)
    rows = _stored(store)
    assert len(rows) == 240
    assert any(r["cost_usd"] is not None and r["model"] == "gpt-4o-mini" for r in rows)  # estimated
    windows = [(0, 2**62), (MIDNIGHT, MIDNIGHT + DAY_MS), (MIDNIGHT - 1, MIDNIGHT + 1),
               (MIDNIGHT + 1, MIDNIGHT + 1)]
    filters = [UsageFilter(), UsageFilter(actor="alice"), UsageFilter(tenant="acme", agent="billing"),
               UsageFilter(model="my-local-model"), UsageFilter(actor="nobody")]
    governance: Any = store
    for group_by in (None, *GROUPS):
        for start, end in windows:
            for where in filters:
                got = governance.usage_groups(group_by, start, end, where)
                _same(got, _brute(rows, group_by, start, end, where))


def test_a_day_group_starts_at_utc_midnight(store: AgentStore) -> None:
    edges = ((MIDNIGHT - 1, 1), (MIDNIGHT, 10), (MIDNIGHT + DAY_MS - 1, 100), (MIDNIGHT + DAY_MS, 1000))
    for at, tokens in edges:
        store.record_usage(UsageEntry(actor="u", model="m", input_tokens=tokens, created_at=at))
    governance: Any = store
    days = governance.usage_groups("day", 0, 2**62)
    assert [(g.key, g.input_tokens) for g in days] == [
        (MIDNIGHT - DAY_MS, 1), (MIDNIGHT, 110), (MIDNIGHT + DAY_MS, 1000)]
    assert [g.cost_usd for g in days] == [None, None, None]  # an unpriced model: no figure


def test_a_runs_tenant_is_recorded_on_the_run_and_its_usage(store: AgentStore) -> None:
    from lunora_jobs.agent import define_agent
    from lunora_jobs.config import Settings
    from lunora_jobs.runtime import Lunora
    from lunora_jobs.testing import final_turn

    app = Lunora([define_agent(name="support", model="offline")], store=store,
                 settings=Settings(openai_api_key=None, openai_base_url=None, scheduler_thread=False))
    from lunora_jobs.models.scripted import ScriptedModel

    app.deps.model_override = ScriptedModel([final_turn("hi"), final_turn("hello")])
    first = app.agents.support.run(input="a", thread_key="t1", owner="u7", tenant="acme")
    app.agents.support.run(input="b", thread_key="t2", owner="u8")
    run = store.get_run(first.id)
    assert run is not None and run.tenant == "acme"
    groups = app.governance.usage("tenant")
    assert [(g.key, g.rows) for g in groups] == [(None, 1), ("acme", 1)]
    assert [(g.key, g.rows) for g in app.governance.usage("agent")] == [("support", 2)]
    assert [g.key for g in app.governance.usage("actor", tenant="acme")] == ["u7"]
