"""``build_ingress`` (what ``lunora ingress`` serves): its routes, and that it only enqueues.

The app's dispatcher here records what would go to the broker (the Celery path itself is covered
by tests/e2e/channels): a claimed event must leave the run's first step in it, and run nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from channels_apps import ENV, channel_agents
from channels_mail import TRUSTED, message, passing
from channels_signing import slack_event, slack_headers
from starlette.testclient import TestClient

from channels.serve import build_ingress
from lunora_jobs.config import Settings
from lunora_jobs.engine.dispatch import InProcessDispatcher, StepTask
from lunora_jobs.errors import ConfigurationError
from lunora_jobs.runtime import Lunora
from lunora_jobs.store import InMemoryStore


class BrokerRecorder:
    """A ``Dispatcher`` that keeps the tasks a broker would receive."""

    def __init__(self) -> None:
        self.tasks: list[StepTask] = []

    def dispatch(self, tasks: Sequence[StepTask]) -> None:
        self.tasks.extend(tasks)

    def revoke(self, run_id: str) -> None:
        return None


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in ENV.items():
        monkeypatch.setenv(name, value)


def test_the_ingress_serves_webhooks_raw_mail_and_health_and_only_enqueues(env: None) -> None:
    broker = BrokerRecorder()
    settings = Settings(email_token="mail-token", email_authserv_id=TRUSTED)
    app = Lunora(channel_agents(), store=InMemoryStore(), dispatcher=broker, settings=settings)
    with TestClient(build_ingress(app)) as client:
        assert client.get("/healthz").json() == {"status": "ok"}
        body = slack_event("hi", event_id="EvIngress")
        assert client.post("/hooks/slack", content=body, headers=slack_headers(body)).status_code == 200
        assert client.post("/hooks/slack", content=body).status_code == 401
        mail = message(auth=[passing()], text="Where is my order?")
        assert client.post("/email", content=mail).status_code == 401
        response = client.post("/email", content=mail, headers={"Authorization": "Bearer mail-token"})
        assert response.status_code == 200
    runs = {r.agent: r for r in app.store.list_runs(limit=10)}
    assert set(runs) == {"slacker", "mailer"}
    assert all(r.status == "running" for r in runs.values())  # queued for the workers, not run here
    assert sorted((t.run_id, t.step) for t in broker.tasks) == sorted(
        (r.id, "llm:turn:0") for r in runs.values())


def test_the_ingress_refuses_to_run_agents_inside_requests(env: None) -> None:
    app = Lunora(channel_agents(), store=InMemoryStore(), dispatcher=InProcessDispatcher())
    with pytest.raises(ConfigurationError, match="CELERY_BROKER_URL"):
        build_ingress(app)


def test_a_tenant_over_quota_is_answered_429_and_nothing_is_started(env: None) -> None:
    from lunora_jobs import Quota

    broker = BrokerRecorder()
    app = Lunora(channel_agents(), store=InMemoryStore(), dispatcher=broker,
                 quotas=[Quota("tenant", tokens=0)])  # every tenant is at its limit
    with TestClient(build_ingress(app)) as client:
        body = slack_event("hi", event_id="EvQuota")
        assert client.post("/hooks/slack", content=body, headers=slack_headers(body)).status_code == 429
        assert app.store.list_runs(limit=10) == [] and broker.tasks == []
        app.deps.quotas = None  # the quota is lifted: Slack's redelivery of the same event starts it
        assert client.post("/hooks/slack", content=body, headers=slack_headers(body)).status_code == 200
    [run] = app.store.list_runs(limit=10)
    assert run.tenant is not None and run.tenant.startswith("slack:")
