"""Reply delivery: post a channel run's final answer back where the request came from.

``register_deliverer("slack", MyDeliverer())`` replaces or adds the deliverer of a channel (for
every app in the process, like ``register_model_provider``).
"""

from channels.delivery.base import Delivered, Deliverer, DeliveryError, Reply
from channels.delivery.discord import DiscordDeliverer
from channels.delivery.email import EmailDeliverer
from channels.delivery.github import GitHubDeliverer
from channels.delivery.registry import deliverer_for, register_deliverer
from channels.delivery.slack import SlackDeliverer

__all__ = [
    "Delivered",
    "Deliverer",
    "DeliveryError",
    "DiscordDeliverer",
    "EmailDeliverer",
    "GitHubDeliverer",
    "Reply",
    "SlackDeliverer",
    "deliverer_for",
    "register_deliverer",
]
