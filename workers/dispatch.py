"""``CeleryDispatcher``: the production ``Dispatcher`` — step tasks go to the broker.

This is on the hot path of every step, so it stays lean: a deterministic task id
(``<run_id>:<step>``), no result backend, and a fan-out of several tool calls sent as ONE pipelined
round trip. The message carries only ``(run_id, step)``; the worker reads everything else from the
database. Celery builds every message (``amqp.create_task_message``).

On a plain ``redis://`` broker (Lunora's transport) the messages go straight onto their queue's key
as the envelope kombu would write (``workers.redis_publish``, pinned to kombu's by a test), with the
step's live notice pipelined after them when the event bus publishes on the same Redis server
(``dispatch_and_publish``, ``engine/notices.py``): one round trip per step for both, and no kombu
producer pool, retry wrapper or channel put (~0.3 ms of CPU per step).

Other brokers, and kinds routed to a queue of their own (``LUNORA_STEP_ROUTES``), go through
Celery's and kombu's public publish path (``amqp.send_task_message``), with a queue declared once per
broker channel, not on every publish (``_Declarations``).

``Lunora.from_env`` builds it when ``CELERY_BROKER_URL`` is set (env ``LUNORA_DISPATCHER`` can name
another class). ``LUNORA_STEP_ROUTES`` sends the steps of a kind to another queue, with a priority
(``{"tool": {"queue": "tools"}}``); run a worker pool on each such queue (``lunora worker -Q tools``).

Example::

    from lunora_jobs.engine.dispatch import StepTask
    CeleryDispatcher().dispatch([StepTask(run_id, "tool:search:call_1", "tool"),
                                 StepTask(run_id, "tool:fetch:call_2", "tool")])
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Mapping, Sequence
from typing import Any

from celery import Celery

from lunora_jobs.config import Settings, StepRoute
from lunora_jobs.engine.dispatch import StepTask
from lunora_jobs.engine.events import RedisPublish
from workers import redis_publish
from workers.celery_app import app as default_app
from workers.celery_app import make_app, require_broker_url
from workers.redis_publish import RedisPublisher, kombu_envelope
from workers.revocations import RUN_STAMP

__all__ = ["MAX_COUNTDOWN_S", "OTHER_STEP_TASK", "RUN_STAMP", "TASK_FOR_KIND", "CeleryDispatcher"]

TASK_FOR_KIND: dict[str, str] = {"turn": "lunora.turn", "tool": "lunora.tool", "proposal": "lunora.proposals"}
"""Which Celery task runs a step route; every other route goes to ``lunora.step``."""

OTHER_STEP_TASK = "lunora.step"

MAX_COUNTDOWN_S = 60.0
"""The longest backoff sent as a broker countdown; a longer one waits in the ledger for the sweep."""


_apps: dict[tuple[str, str], Celery] = {}


class _Declarations:
    """Which queues were declared on which broker channel.

    Left to itself, ``send_task_message`` asks kombu to declare the queue on every publish; kombu's
    cache then skips the declaration, but only after copying the queue and its exchange and binding
    the copies to the channel: ~0.12 ms of CPU of a ~0.55 ms publish (``python bench/publish.py``).
    Past the first publish of a queue on a channel, ``declare=[]`` (a public argument) skips that.
    A reconnect gives the producer a new channel, whose first publish declares again, as kombu
    would (its cache is per connection and cleared on a reconnect).
    """

    def __init__(self) -> None:
        self._queues: weakref.WeakKeyDictionary[Any, set[str]] = weakref.WeakKeyDictionary()

    def before(self, producer: Any, queue: str) -> list[Any] | None:
        """``declare`` for a publish of ``queue``: None (Celery declares it) or [] (already done)."""
        declared = self._queues.get(producer.channel)
        return [] if declared is not None and queue in declared else None

    def after(self, producer: Any, queue: str) -> None:
        """Record that a publish of ``queue`` on the producer's channel went out."""
        self._queues.setdefault(producer.channel, set()).add(queue)


def _app_for(broker_url: str, queue: str) -> Celery:
    """The process-wide app when it matches, else one cached app per (broker, queue)."""
    if broker_url == default_app.conf.broker_url and queue == default_app.conf.task_default_queue:
        return default_app
    key = (broker_url, queue)
    if key not in _apps:
        _apps[key] = make_app(broker_url, queue)
    return _apps[key]


class CeleryDispatcher:
    """Enqueue step tasks on Celery.

    ``broker_url`` and ``queue`` default to the worker config (``CELERY_BROKER_URL``,
    ``LUNORA_QUEUE``); pass ``app`` to reuse a Celery app you configured yourself.
    """

    def __init__(
        self, broker_url: str | None = None, queue: str | None = None, *, app: Celery | None = None,
        routes: Mapping[str, StepRoute] | None = None,
    ):
        # Read the settings now, not at import: a process may build apps for several configs.
        settings = Settings()
        self.queue: str = queue or (str(app.conf.task_default_queue) if app is not None else settings.queue)
        if app is None:
            app = _app_for(broker_url or require_broker_url(settings), self.queue)
        self.app: Celery = app
        configured = settings.step_routes if routes is None else routes
        self.routes: dict[str, StepRoute] = {str(kind): route for kind, route in configured.items()}
        """Step route -> queue and priority (``LUNORA_STEP_ROUTES``); other routes go to ``queue``."""
        self._declarations = _Declarations()
        self._direct = RedisPublisher(str(app.conf.broker_url)) if redis_publish.serves(app) else None
        """Where messages go straight onto their queue's key (``workers.redis_publish``), else None."""

    def dispatch(self, tasks: Sequence[StepTask]) -> None:
        """Send ``tasks`` in one round trip (several go out pipelined).

        A task delayed by a retry's backoff goes out with a countdown of at most ``MAX_COUNTDOWN_S``;
        a longer one is not sent: the ledger holds the step until it is due and the sweep dispatches
        it then (a long broker ETA is held by one worker: lost with it, or, with a visibility
        timeout set, redelivered past it)."""
        self._dispatch(tasks, None)

    def dispatch_and_publish(self, tasks: Sequence[StepTask], publish: RedisPublish) -> bool:
        """``dispatch``, with ``publish`` (a live notice) pipelined after the enqueue when it is for the
        broker's own Redis server: True when it went out, False when the caller is to send it."""
        return self._dispatch(tasks, publish)

    def _dispatch(self, tasks: Sequence[StepTask], publish: RedisPublish | None) -> bool:
        tasks = [task for task in tasks if task.delay_s <= MAX_COUNTDOWN_S]
        direct = self._direct
        routed = bool(self.routes) and any(task.kind in self.routes for task in tasks)
        if direct is not None and not routed:
            riding = [publish] if publish is not None and publish.server == direct.server else []
            if tasks or riding:
                queue = self.queue
                envelopes = [(queue, kombu_envelope(self._message(task)[1], queue)) for task in tasks]
                direct.send(envelopes, riding)
            return bool(riding)
        if tasks:
            self._through_kombu(tasks)
        return False

    def _through_kombu(self, tasks: Sequence[StepTask]) -> None:
        """Celery's publish path: a routed kind (its queue and priority) or a broker that is not a
        plain Redis on Lunora's transport."""
        with self.app.producer_or_acquire() as producer:
            batch = getattr(producer, "batch", None)
            scope = batch() if len(tasks) > 1 and batch is not None else contextlib.nullcontext()
            with scope:
                for task in tasks:
                    self._send(producer, task)

    def _message(self, task: StepTask) -> tuple[str, Any]:
        # Celery's own message builder, without ``send_task``'s routing and context lookups (the
        # queue is known) or ``saferepr`` of two strings.
        name = TASK_FOR_KIND.get(task.kind, OTHER_STEP_TASK)
        return name, self.app.amqp.create_task_message(
            task.task_id, name, (task.run_id, task.step), {},
            countdown=task.delay_s or None, ignore_result=True,
            argsrepr=f"({task.run_id!r}, {task.step!r})", kwargsrepr="{}",
            stamped_headers=[RUN_STAMP], **{RUN_STAMP: task.run_id},
        )

    def _send(self, producer: Any, task: StepTask) -> None:
        name, message = self._message(task)
        amqp = self.app.amqp
        route = self.routes.get(task.kind)
        queue = self.queue if route is None else route.queue
        declare = self._declarations.before(producer, queue)
        if route is None:
            amqp.send_task_message(producer, name, message, queue=queue, declare=declare)
        else:
            amqp.send_task_message(producer, name, message, queue=queue, declare=declare,
                                   priority=route.priority)
        self._declarations.after(producer, queue)

    def revoke(self, run_id: str) -> None:
        """Best-effort: tell the workers to drop queued tasks of ``run_id`` (a broadcast, no reply).

        The ledger stays the authority — a cancelled run's steps are refused by the engine anyway;
        this only spares the workers from waking up for them.
        """
        self.app.control.revoke_by_stamped_headers({RUN_STAMP: [run_id]})
