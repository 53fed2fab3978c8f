"""The reply seam: a ``Deliverer`` posts a run's final answer back to the channel it came from.

Delivery runs as a durable step of the run, so it is at-least-once: a worker killed after the
provider accepted the post but before the step was recorded runs it again. Each deliverer makes
that retry harmless with the reply's idempotency ``key``: it looks for its own earlier post before
posting again (``Reply.retry`` says when to look), or uses an idempotent provider call.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

from channels.inbound.event import ReplyTarget

Delivered = Literal["posted", "already-posted"]


class DeliveryError(Exception):
    """The provider refused or could not be reached; the step retries (with the run's attempts)."""


@dataclass(frozen=True, slots=True)
class Reply:
    """One answer to deliver.

    ``key`` is unique per run and stable across retries; ``retry`` is True when an earlier attempt
    of this delivery may have reached the provider; ``token`` is the API token named by the agent's
    ``on_inbound["token_env"]`` (None for channels that need none).
    """

    target: ReplyTarget
    text: str
    key: str
    retry: bool = False
    token: str | None = None


class Deliverer(Protocol):
    """Posts replies for one channel (``slack``, ``github``, ``discord``, ``email``, or your own)."""

    def deliver(self, reply: Reply) -> Delivered:
        """Post ``reply`` unless an earlier attempt already did; raise ``DeliveryError`` to retry."""
        ...
