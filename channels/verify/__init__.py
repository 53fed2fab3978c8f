"""Request verifiers for Slack, GitHub and Discord, usable on their own.

Each takes the request headers, the raw body (bytes, before any parsing) and the secret, and
answers ``True`` only for a request the platform signed; anything else — a bad, missing or
malformed signature, a stale timestamp — is ``False``, never an exception.
"""

from channels.verify.discord import verify_discord
from channels.verify.github import github_signature, verify_github
from channels.verify.slack import verify_slack

__all__ = ["github_signature", "verify_discord", "verify_github", "verify_slack"]
