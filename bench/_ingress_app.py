"""What ``bench/ingress.py``'s ingress and worker processes load (``LUNORA_APP=_ingress_app:build_app``):
one Slack agent that answers in one scripted turn and posts no reply (no Slack API in a benchmark)."""

from __future__ import annotations

from typing import Any

SECRET_ENV = "BENCH_SLACK_SECRET"


def build_app() -> Any:
    """The benchmark app on the environment's database and broker."""
    from lunora_jobs import define_agent
    from lunora_jobs.models.scripted import ScriptedModel, final_turn
    from lunora_jobs.runtime import Lunora

    agent = define_agent(
        name="bench_inbound", model=ScriptedModel([final_turn("ok")]),
        on_inbound={"channel": "slack", "secret_env": SECRET_ENV, "map": lambda event: event.text,
                    "reply": False},
    )
    return Lunora.from_env(agents=[agent])
