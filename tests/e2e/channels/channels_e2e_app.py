"""The user app of the channel end-to-end tests: ``LUNORA_APP=channels_e2e_app:build_app``.

Three agents, one per way in (Slack, Discord, email), each answering in one scripted turn. Every
process of a test (ingress replicas, workers) loads it from the environment, as in production.
"""

from __future__ import annotations

import time
from typing import Any

from lunora_jobs import define_agent, define_tool
from lunora_jobs.models.scripted import ScriptedModel, final_turn, tool_call_turn

LOOKUP_S = 1.5
"""The Slack agent's one tool takes this long: a Slack retry then arrives while its run is going."""


def _lookup(args: dict[str, Any]) -> str:
    time.sleep(LOOKUP_S)
    return f"parcel {args['what']} is on its way"


lookup = define_tool(
    name="lookup", description="Look something up (slowly).", execute=_lookup,
    input_schema={"type": "object", "properties": {"what": {"type": "string"}}, "required": ["what"]},
)


def _slack_text(event: Any) -> Any:
    return {"input": event.text, "title": "from Slack"} if event.text else None


def _email(email: Any) -> Any:
    # Only mail the trusted border MTA authenticated (dmarc=pass) is claimed.
    if email.authentication.dmarc != "pass":
        return None
    return {"input": email.text or "", "title": email.subject}


slack_agent = define_agent(
    name="slack_helper", tools=[lookup],
    model=ScriptedModel([tool_call_turn("c1", "lookup", {"what": "p-1"}),
                         final_turn("Here is your answer, from Slack.")]),
    on_inbound={"channel": "slack", "secret_env": "E2E_SLACK_SECRET", "map": _slack_text,
                "token_env": "E2E_SLACK_TOKEN"},
    on_concurrent_run="queue",
)
discord_agent = define_agent(
    name="discord_helper", model=ScriptedModel([final_turn("Here is your answer, from Discord.")]),
    on_inbound={"channel": "discord", "secret_env": "E2E_DISCORD_KEY", "map": lambda e: e.text},
)
mail_agent = define_agent(
    name="mail_helper", model=ScriptedModel([final_turn("Here is your answer, by email.")]),
    on_email=_email,
)


def build_app() -> Any:
    """The app on the environment's database, broker and settings."""
    from lunora_jobs.runtime import Lunora

    return Lunora.from_env(agents=[slack_agent, discord_agent, mail_agent])
