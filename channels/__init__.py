"""Verified ingress: Slack, GitHub and Discord webhooks and email hand work to the queue.

Example::

    from channels import dispatch_agent_channel, verify_github, verify_slack, verify_discord

    verify_github({"X-Hub-Signature-256": sig}, body, secret)   # True / False, never an exception
    asgi_app = dispatch_agent_channel([app.agents.support])      # serve it with uvicorn
"""

from channels.dispatch import dispatch_agent_channel
from channels.inbound import ChannelIdentity, InboundEvent, ReplyTarget
from channels.verify import verify_discord, verify_github, verify_slack

__all__ = [
    "ChannelIdentity",
    "InboundEvent",
    "ReplyTarget",
    "dispatch_agent_channel",
    "verify_discord",
    "verify_github",
    "verify_slack",
]
