"""An app wired for channel tests: agents with ``on_inbound`` / ``on_email``, a scripted model,
the deliverers pointed at local stand-ins, runs started through the real ``AppRunStarter``."""

from __future__ import annotations

from typing import Any

from channels_signing import DISCORD_PUBLIC_HEX, GITHUB_SECRET, SLACK_SECRET

from channels.inbound import InboundEvent
from lunora_jobs import define_agent
from lunora_jobs.agent import AgentDefinition
from lunora_jobs.config import Settings
from lunora_jobs.models.scripted import ScriptedModel, final_turn
from lunora_jobs.runtime import Lunora

SLACK_TOKEN, GITHUB_TOKEN = "xoxb-test", "ghs_test"
ENV = {"T_SLACK_SECRET": SLACK_SECRET, "T_GITHUB_SECRET": GITHUB_SECRET, "T_DISCORD_KEY": DISCORD_PUBLIC_HEX,
       "T_SLACK_TOKEN": SLACK_TOKEN, "T_GITHUB_TOKEN": GITHUB_TOKEN}


def _text(event: InboundEvent) -> Any:
    return event.text or None


def channel_agents(answer: str = "the answer", *, on_email: Any = None) -> list[AgentDefinition]:
    """One agent per channel, each answering ``answer`` in one turn."""
    model = ScriptedModel([final_turn(answer)])
    return [
        define_agent(name="slacker", model=model, on_inbound={
            "channel": "slack", "secret_env": "T_SLACK_SECRET", "map": _text, "token_env": "T_SLACK_TOKEN"}),
        define_agent(name="hubber", model=model, on_inbound={
            "channel": "github", "secret_env": "T_GITHUB_SECRET", "map": _text,
            "token_env": "T_GITHUB_TOKEN"}),
        define_agent(name="discorder", model=model, on_inbound={
            "channel": "discord", "secret_env": "T_DISCORD_KEY", "map": _text}),
        define_agent(name="mailer", model=model, on_email=on_email or (lambda email: email.text)),
    ]


def channel_app(database_url: str, settings: Settings, **kwargs: Any) -> Lunora:
    """An embedded app (in-process dispatcher) over ``database_url`` with ``settings``."""
    return Lunora(channel_agents(), database_url=database_url, settings=settings, **kwargs)
