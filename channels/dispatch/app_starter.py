"""``AppRunStarter``: the production ``RunStarter`` — dedupe in the inbound ledger, then start the
run through the app's dispatcher (Celery: the first step goes to the broker; nothing runs here).
"""

from __future__ import annotations

import uuid
from typing import Any

from channels.dispatch.starter import InboundRun, StartResult
from channels.ledger import delivery_key, ledger_for
from lunora_jobs.engine.dispatch import InProcessDispatcher
from lunora_jobs.errors import ConfigurationError


class AppRunStarter:
    """Starts claimed events as runs of ``app``'s agents, at most once per dedupe key.

    The app's dispatcher must hand steps to workers (Celery): with the in-process dispatcher the
    request thread would run the whole agent. ``inline=True`` allows that on purpose (tests, a
    scratch app).

    Example::

        starter = AppRunStarter(app)              # app = Lunora.from_env(agents=[support])
        asgi = dispatch_agent_channel(app.agents, starter=starter)
    """

    def __init__(self, app: Any, *, inline: bool = False) -> None:
        if isinstance(app.dispatcher, InProcessDispatcher) and not inline:
            raise ConfigurationError(
                "the ingress would run agents inside the request with the in-process dispatcher; set "
                "CELERY_BROKER_URL so runs go to the workers (or pass inline=True in tests)."
            )
        self.app = app
        self.ledger = ledger_for(app.store)

    def start(self, run: InboundRun) -> StartResult:
        """Claim ``run.dedupe_key``; the winner starts the run under the claimed id."""
        store = self.app.store
        key = delivery_key(run.dedupe_key)
        claim = self.ledger.claim(
            key, channel=run.dedupe_key.split(":", 1)[0], agent=run.agent, run_id=uuid.uuid4().hex,
            reply=run.reply.to_json() if run.reply is not None else None, now=self.app.deps.now(),
        )
        if claim.status == "duplicate":
            return StartResult("duplicate", claim.run_id)
        existed = claim.retaken and store.get_run(claim.run_id) is not None
        try:
            self.app.agents[run.agent].run(
                input=run.input, thread_key=run.thread_key, owner=run.owner, title=run.title,
                run_id=claim.run_id, tenant=run.tenant,
            )
        except BaseException:
            self.ledger.release(key)
            raise
        self.ledger.started(key, self.app.deps.now())
        return StartResult("duplicate" if existed else "started", claim.run_id)
