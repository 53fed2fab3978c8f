"""Apps over a store on a ``FakeClock``, with the embedded ticker off: the tests drive ``dispatch_due``."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
from scheduling_support import START, MakeApp, ops, support

from lunora_jobs import Lunora, Settings
from lunora_jobs.models.scripted import ScriptedModel, final_turn
from lunora_jobs.scheduling import CronEntry
from lunora_jobs.store.memory import InMemoryStore
from lunora_jobs.store.sql import create_store
from lunora_jobs.testing import FakeClock


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(START)


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, clock: FakeClock, tmp_path: Path) -> Iterator[Any]:
    if request.param == "memory":
        yield InMemoryStore(clock=clock)
        return
    sql = create_store(f"sqlite:///{tmp_path / 'sched.db'}", clock=clock)
    yield sql
    sql.close()


@pytest.fixture
def make_app(store: Any) -> Iterator[MakeApp]:
    apps: list[Lunora] = []

    def make(crons: Iterable[CronEntry] = (), **kwargs: Any) -> Lunora:
        app = Lunora(
            [support, ops], store=store, settings=Settings(scheduler_thread=False),
            model=ScriptedModel([final_turn("done")]), crons=crons, **kwargs,
        )
        apps.append(app)
        return app

    yield make
    for app in apps:
        app.scheduler.stop()
