"""``CeleryDispatcher``: the production ``Dispatcher`` — step tasks go to the broker.

This is on the hot path of every step, so it stays lean: one pooled producer (and connection) per
call, a deterministic task id (``<run_id>:<step>``), no result backend, and a fan-out of several
tool calls sent as ONE pipelined Redis round trip. The message carries only ``(run_id, step)``; the
worker reads everything else from the database.

On Redis the message is built by Celery (``create_task_message``: headers and body) and wrapped in
kombu's Redis envelope here (``redis_envelope``), then LPUSHed on the producer channel's client:
kombu's ``Producer.publish`` spent ~0.4 ms of Python per message (entity copies for
``maybe_declare``, its retry wrapper) for what is one LPUSH — a tenth of a step's CPU. The envelope is
kombu's message but for the random delivery tag (``tests/integration/workers/
test_dispatch_envelope.py`` compares them). kombu's own path is used whenever that shortcut would
skip something: another transport (RabbitMQ), a queue with an expiry, another serializer or a
compression, a ``before_task_publish``/``after_task_publish`` receiver (tracing instrumentations), or
a Redis error (kombu then reconnects and retries the publish under its retry policy).

``Lunora.from_env`` builds it when ``CELERY_BROKER_URL`` is set (env ``LUNORA_DISPATCHER`` can name
another class). ``LUNORA_STEP_ROUTES`` sends the steps of a kind to another queue, with a priority
(``{"tool": {"queue": "tools"}}``); run a worker pool on each such queue (``lunora worker -Q tools``).

Example::

    from lunora_jobs.engine.dispatch import StepTask
    CeleryDispatcher().dispatch([StepTask(run_id, "tool:search:call_1", "tool"),
                                 StepTask(run_id, "tool:fetch:call_2", "tool")])
"""

from __future__ import annotations

import base64
import contextlib
import json
import uuid
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import redis.exceptions
from celery import Celery, signals

from lunora_jobs.config import Settings, StepRoute
from lunora_jobs.engine.dispatch import StepTask
from workers.celery_app import app as default_app
from workers.celery_app import make_app, require_broker_url
from workers.revocations import RUN_STAMP

__all__ = ["MAX_COUNTDOWN_S", "OTHER_STEP_TASK", "RUN_STAMP", "TASK_FOR_KIND", "CeleryDispatcher"]

TASK_FOR_KIND: dict[str, str] = {"turn": "lunora.turn", "tool": "lunora.tool", "proposal": "lunora.proposals"}
"""Which Celery task runs a step route; every other route goes to ``lunora.step``."""

OTHER_STEP_TASK = "lunora.step"

MAX_COUNTDOWN_S = 60.0
"""The longest backoff sent as a broker countdown; a longer one waits in the ledger for the sweep."""


_apps: dict[tuple[str, str], Celery] = {}


def _app_for(broker_url: str, queue: str) -> Celery:
    """The process-wide app when it matches, else one cached app per (broker, queue)."""
    if broker_url == default_app.conf.broker_url and queue == default_app.conf.task_default_queue:
        return default_app
    key = (broker_url, queue)
    if key not in _apps:
        _apps[key] = make_app(broker_url, queue)
    return _apps[key]


def reuse_redis_client(channel: Any) -> None:
    """Make a kombu Redis channel of the producer pool reuse one redis-py client for its publishes.

    kombu builds a new ``redis.Redis`` (over the channel's connection pool) for every publish, and
    building one costs ~0.1 ms of Python (its response-callback tables): a third of a step's
    enqueue. The client is stateless over the pool, so one per channel serves every publish; it is
    rebuilt if the channel gets a new pool. Other transports (RabbitMQ) are left alone.

    This replaces the channel's ``conn_or_acquire`` and calls its private ``_create_client``: kombu
    has no public way to hand its Redis channel a client (nor a transport option for it), and the
    cost itself is redis-py's, tracked upstream as redis/redis-py#3624 (cache the default response
    callbacks instead of rebuilding them per client; fix proposed in redis/redis-py#4124). Once a
    redis-py release caches them, drop this function. Tested with kombu 5.7 — the range pinned in
    pyproject.toml — and guarded by tests/integration/workers/test_dispatch_client_reuse.py.
    """
    if getattr(channel, "_lunora_reuses_client", False):
        return
    if type(channel).__module__ != "kombu.transport.redis":
        return
    cached: list[Any] = []

    @contextlib.contextmanager
    def conn_or_acquire(client: Any = None) -> Iterator[Any]:
        if client:
            yield client
            return
        pool = channel.pool
        if not cached or cached[0] is not pool:
            cached[:] = [pool, channel._create_client()]
        yield cached[1]

    channel.conn_or_acquire = conn_or_acquire
    channel._lunora_reuses_client = True


def redis_envelope(message: Any, queue: str, priority: int) -> str:
    """kombu's Redis message for Celery's ``create_task_message`` output, JSON as kombu LPUSHes it:
    the JSON body base64-encoded, ``delivery_info`` naming the anonymous exchange and ``queue``, a
    fresh delivery tag (what ``Producer.publish`` → ``Channel.basic_publish`` → ``_put`` build)."""
    headers, properties, body, _ = message
    return json.dumps({
        "body": base64.b64encode(json.dumps(body).encode("utf-8")).decode("ascii"),
        "content-encoding": "utf-8",
        "content-type": "application/json",
        "headers": headers,
        "properties": {
            **properties, "delivery_mode": 2, "delivery_info": {"exchange": "", "routing_key": queue},
            "priority": priority, "body_encoding": "base64", "delivery_tag": str(uuid.uuid4()),
        },
    })


def plain_json(app: Celery) -> bool:
    """Whether ``app`` sends JSON, uncompressed, persistent messages (what ``redis_envelope`` builds)."""
    conf = app.conf
    return bool(conf.task_serializer == "json" and not conf.task_compression
                and conf.task_default_delivery_mode in ("persistent", 2))


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
        self._plain_json: bool | None = None

    def dispatch(self, tasks: Sequence[StepTask]) -> None:
        """Send ``tasks`` through one pooled producer; several go out in one pipelined round trip.

        A task delayed by a retry's backoff goes out with a countdown of at most ``MAX_COUNTDOWN_S``;
        a longer one is not sent: the ledger holds the step until it is due and the sweep dispatches
        it then (a long broker ETA would be redelivered past the visibility timeout)."""
        tasks = [task for task in tasks if task.delay_s <= MAX_COUNTDOWN_S]
        if not tasks:
            return
        with self.app.producer_or_acquire() as producer:
            reuse_redis_client(producer.channel)
            if self._direct(producer.channel) and self._lpush(producer.channel, tasks):
                return
            batch = getattr(producer, "batch", None)
            scope = batch() if len(tasks) > 1 and batch is not None else contextlib.nullcontext()
            with scope:
                for task in tasks:
                    self._send(producer, task)

    def _direct(self, channel: Any) -> bool:
        """Whether ``channel``'s messages may be LPUSHed directly (``redis_envelope``)."""
        if self._plain_json is None:  # read once: Celery's settings lookups cost more than the envelope
            self._plain_json = plain_json(self.app)
        return (
            self._plain_json and type(channel).__module__ == "kombu.transport.redis"
            and not signals.before_task_publish.receivers and not signals.after_task_publish.receivers
        )

    def _lpush(self, channel: Any, tasks: Sequence[StepTask]) -> bool:
        """LPUSH each task's kombu envelope in one round trip; False (nothing sent for sure, or a
        duplicate the ledger absorbs) when a queue expires or Redis failed: kombu's path then runs."""
        pushes = []
        for task in tasks:
            _, message = self._message(task)
            route = self.routes.get(task.kind)
            queue = self.queue if route is None else route.queue
            priority = 0 if route is None or route.priority is None else route.priority
            if queue in getattr(channel, "_expires", {}):
                return False
            pushes.append((channel._q_for_pri(queue, priority), redis_envelope(message, queue, priority)))
        try:
            with channel.conn_or_acquire() as client:
                if len(pushes) == 1:
                    client.lpush(*pushes[0])
                else:
                    pipe = client.pipeline(transaction=False)
                    for key, payload in pushes:
                        pipe.lpush(key, payload)
                    pipe.execute()
        except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError):
            return False  # a message that did land is delivered twice: the ledger replays it
        return True

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
        if route is None:
            amqp.send_task_message(producer, name, message, queue=self.queue)
        else:
            amqp.send_task_message(producer, name, message, queue=route.queue, priority=route.priority)

    def revoke(self, run_id: str) -> None:
        """Best-effort: tell the workers to drop queued tasks of ``run_id`` (a broadcast, no reply).

        The ledger stays the authority — a cancelled run's steps are refused by the engine anyway;
        this only spares the workers from waking up for them.
        """
        self.app.control.revoke_by_stamped_headers({RUN_STAMP: [run_id]})
