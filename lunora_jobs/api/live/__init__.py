"""Live thread streams: the per-process hub of notices and the feed each stream serves."""

from lunora_jobs.api.live.feed import FeedEvent, ThreadFeed
from lunora_jobs.api.live.hub import LiveHub, LocalHub, RedisHub, Subscription

__all__ = ["FeedEvent", "LiveHub", "LocalHub", "RedisHub", "Subscription", "ThreadFeed"]
