"""The user app of the real-beat scheduling test: ``LUNORA_APP=sched_app:build_app`` (this folder on
PYTHONPATH). ``later`` answers every run at once; ``pulse`` is a cron entry every 2 seconds."""

from __future__ import annotations

from lunora_jobs import Lunora, cron_jobs, define_agent
from lunora_jobs.models.scripted import ScriptedModel, final_turn

PULSE_EVERY_S = 2

later = define_agent(name="later", instructions="Follow up.",
                     model=ScriptedModel([final_turn("followed up")]))
pulse = define_agent(name="pulse", instructions="Tick.", model=ScriptedModel([final_turn("tick")]))

crons = cron_jobs()
crons.interval("pulse", seconds=PULSE_EVERY_S, agent=pulse, input="tick")


def build_app() -> Lunora:
    """The app every process of the test loads (workers, both beats, the test itself)."""
    return Lunora.from_env(agents=[later, pulse], crons=crons)
