"""kombu's Redis transport, with one redis-py client per connection pool instead of one per command.

kombu's Redis channel builds a new ``redis.Redis`` around its connection pool for every command it
sends: each publish, each ack, each visibility-timeout restore. Building a client copies redis-py's
table of ~170 response callbacks through ``str.upper`` (redis/redis-py#3624, still open), which
costs more CPU than the LPUSH itself: a step's publish through ``CeleryDispatcher`` took 0.75-0.94 ms
of CPU on the stock transport and 0.52-0.66 ms on this one, and a raw Celery hop 0.79-0.86x of its
stock time (``python bench/publish.py``; ``python bench/peers.py --ladder``). A ``redis.Redis``
holds no connection of its own: it borrows one from its pool per command, so sharing one per pool is
what every redis-py application does, and it is thread-safe; a client kombu pins a connection to
(``client.connection``, the consumer's BRPOP) is never shared.

Nothing else changes: the messages, keys, acks and visibility timeout are kombu's own, written by
kombu's own code, so workers and producers on the stock transport interoperate with this one. (Its
ack emulation, the ``unacked`` copy of each delivered message, is a transport option that
``make_app`` turns off unless ``LUNORA_VISIBILITY_TIMEOUT`` is set: ``celery_app.redelivery_options``.)
``make_app`` selects it for ``redis://`` brokers (``broker_transport``); other schemes keep theirs.

The seam is the channel's public ``Client`` attribute (the factory kombu calls with
``connection_pool=``); should kombu stop calling it, this class degrades to the stock transport.
"""

from __future__ import annotations

from typing import Any

from kombu.transport import redis as kombu_redis

__all__ = ["TRANSPORT", "Channel", "Transport", "serves"]

TRANSPORT = "workers.redis_transport:Transport"
"""The ``broker_transport`` value that selects this transport (kombu resolves the path)."""


def serves(broker_url: str) -> bool:
    """Whether this transport replaces kombu's for ``broker_url``: one plain ``redis://`` broker
    (``rediss://`` keeps kombu's TLS defaults, a failover list keeps kombu's own handling)."""
    return broker_url.startswith("redis://") and ";" not in broker_url


_SHAREABLE_ARGUMENTS = frozenset({"connection_pool", "credential_provider"})
"""The arguments kombu builds its clients with; a call with any other builds a fresh client."""


class Channel(kombu_redis.Channel):
    """A Redis channel whose ``Client`` factory returns one client per connection pool."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[no-untyped-call]
        build = self.Client
        clients: dict[Any, Any] = {}  # pool -> its client (redis-py pools hash by identity)

        def client_for(**arguments: Any) -> Any:
            pool = arguments.get("connection_pool")
            if pool is None or not _SHAREABLE_ARGUMENTS.issuperset(arguments):
                return build(**arguments)
            shared = clients.get(pool)
            # A client kombu pinned a connection to (the consumer's BRPOP client) is its owner's alone.
            if shared is None or shared.connection is not None:
                shared = clients[pool] = build(**arguments)
            return shared

        self.Client = client_for


class Transport(kombu_redis.Transport):
    """kombu's Redis transport on :class:`Channel`."""

    Channel = Channel
