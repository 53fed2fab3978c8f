"""Replies: a channel run's answer goes back where the request came from, as a durable step.

``attach(app)`` (called by ``Lunora`` itself for an app whose agents declare ``on_inbound`` or
``on_email``) registers the ``reply:<channel>`` step kind and the hooks that dispatch it;
``sweep_replies`` repairs a dispatch or delivery lost to a crash.
"""

from channels.replies.attach import attach
from channels.replies.hooks import ReplyHooks
from channels.replies.kind import FAILED_TEXT, REPLY_PREFIX, ReplyStep, answer_text, reply_step
from channels.replies.repair import ReplySweep, sweep_replies

__all__ = [
    "FAILED_TEXT",
    "REPLY_PREFIX",
    "ReplyHooks",
    "ReplyStep",
    "ReplySweep",
    "answer_text",
    "attach",
    "reply_step",
    "sweep_replies",
]
