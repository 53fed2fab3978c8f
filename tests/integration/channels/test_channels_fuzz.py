"""A property-based fuzz of the webhook app: >= 10,000 generated requests with random headers and
bodies, some validly signed with the real signers. Never a 5xx; every request without a valid
signature is a 401 that reaches no mapper; no run is started for anything but a validly signed
event."""

from __future__ import annotations

from typing import Any

import pytest
from channels_fuzz import FuzzRequest, fuzz_request
from channels_signing import DISCORD_PUBLIC_HEX, GITHUB_SECRET, SLACK_SECRET
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient
from test_channels_ingress_app import BrokerRecorder

from channels import InboundEvent, dispatch_agent_channel
from channels.dispatch import AppRunStarter, InboundRun, StartResult
from lunora_jobs import define_agent
from lunora_jobs.runtime import Lunora
from lunora_jobs.store import InMemoryStore

BATCH = 20
EXAMPLES = 520  # 520 x 20 = 10,400 requests


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_fuzz_never_5xx_and_never_starts_an_unsigned_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FZ_SLACK", SLACK_SECRET)
    monkeypatch.setenv("FZ_GITHUB", GITHUB_SECRET)
    monkeypatch.setenv("FZ_DISCORD", DISCORD_PUBLIC_HEX)
    seen: list[str] = []

    def mapper(event: InboundEvent) -> Any:
        seen.append(event.dedupe_key)
        return event.text or "(empty)"

    agents = [
        define_agent(name=f"fz-{c}", on_inbound={"channel": c, "secret_env": env, "map": mapper})
        for c, env in (("slack", "FZ_SLACK"), ("github", "FZ_GITHUB"), ("discord", "FZ_DISCORD"))
    ]
    # The production starter (dedupe ledger, start_run) on a real store; the broker is recorded.
    app = Lunora(agents, store=InMemoryStore(), dispatcher=BrokerRecorder())
    starter = TrackingStarter(app)
    client = TestClient(dispatch_agent_channel(agents, starter=starter), raise_server_exceptions=False)
    signed_keys: set[str] = set()
    stats = {"sent": 0, "signed": 0, "claimed": 0}

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        derandomize=False,
        suppress_health_check=list(HealthCheck),
    )
    @given(st.lists(fuzz_request(), min_size=BATCH, max_size=BATCH))
    def run(batch: list[FuzzRequest]) -> None:
        for request in batch:
            headers = [(name.encode("latin-1"), value.encode("latin-1")) for name, value in request.headers]
            response = client.post("/", content=request.body, headers=headers)
            stats["sent"] += 1
            assert response.status_code < 500, (response.status_code, request)
            if request.validly_signed:
                stats["signed"] += 1
                assert response.status_code != 401, request
                if request.dedupe_key is not None:
                    signed_keys.add(request.dedupe_key)
                    stats["claimed"] += response.status_code == 200
            else:
                assert response.status_code == 401 and response.text == "unauthorized", (response, request)

    run()
    assert stats["sent"] >= 10_000, stats
    assert set(seen) <= signed_keys, "a mapper saw an event without a valid signature"
    assert set(starter.runs) <= signed_keys, "a run started without a valid signature"
    stored = {r.id for r in app.store.list_runs(limit=100_000)}
    assert stored == set(starter.runs.values()), "a run in the store that no signed event started"
    # not vacuous: a good share of the traffic was signed and claimed
    assert stats["signed"] > 1000 and stats["claimed"] > 500 and len(starter.runs) > 100, stats


class TrackingStarter(AppRunStarter):
    """The production starter, remembering which dedupe key started which run."""

    def __init__(self, app: Lunora) -> None:
        super().__init__(app)
        self.runs: dict[str, str] = {}

    def start(self, run: InboundRun) -> StartResult:
        result = super().start(run)
        if result.status == "started":
            self.runs[run.dedupe_key] = result.run_id
        return result
