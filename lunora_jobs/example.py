"""``lunora example``: a weather agent run end to end on the embedded default.

SQLite under ``LUNORA_DATA_DIR`` (``./.lunora``), the in-process dispatcher (the same step code the
Celery workers run, inline) and the deterministic offline model — clearly labelled as offline — unless
``OPENAI_API_KEY`` or ``OPENAI_BASE_URL`` is set, in which case the agent talks to that endpoint
(``openai:<LUNORA_EXAMPLE_MODEL>``, default ``gpt-4o-mini``). The ``get_weather`` tool dispatches
``weather:lookup`` to a deterministic local function, so no weather service is needed.

Example::

    lunora example "What's the weather in Berlin?"
"""

from __future__ import annotations

import hashlib
import sys
import uuid
from typing import Any

from lunora_jobs.agent import define_agent
from lunora_jobs.config import Settings
from lunora_jobs.runtime import Lunora, RunResult
from lunora_jobs.tools import ToolContext, tool

SKIES = ("sunny", "partly cloudy", "overcast", "light rain", "windy")


def lookup_weather(args: dict[str, Any]) -> dict[str, Any]:
    """``weather:lookup``: a deterministic stand-in for a weather API (same city, same answer)."""
    city = str(args.get("city") or "").strip() or "Nowhere"
    digest = int(hashlib.sha256(city.lower().encode()).hexdigest(), 16)
    return {"city": city, "temp_c": digest % 35 - 5, "sky": SKIES[digest % len(SKIES)]}


@tool
def get_weather(city: str, ctx: ToolContext) -> Any:
    """Look up the current weather for a city."""
    # The step name is the idempotency key: a replayed step dedupes downstream.
    return ctx.run("weather:lookup", {"city": city}, idempotency_key=ctx.idempotency_key)


def example_model(settings: Settings) -> tuple[str, str]:
    """``(model option, label)``: OpenAI-compatible when configured, else the offline model."""
    if settings.openai_api_key or settings.openai_base_url:
        name = settings.example_model
        where = settings.openai_base_url or "api.openai.com"
        return f"openai:{name}", f"openai:{name} via {where}"
    return "offline", (
        "offline (deterministic, no network; set OPENAI_API_KEY or OPENAI_BASE_URL for a real model)"
    )


def build_app(settings: Settings | None = None) -> Lunora:
    """The example's app: the weather agent on SQLite under ``data_dir``, dispatched in process."""
    settings = settings or Settings()
    model, _ = example_model(settings)
    agent = define_agent(
        name="weather", model=model, tools=[get_weather], max_turns=4,
        instructions=(
            "You answer weather questions. Call get_weather for the city, then answer in one sentence."
        ),
    )
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    url = f"sqlite:///{(settings.data_dir / 'lunora.db').as_posix()}"
    return Lunora([agent], database_url=url, settings=settings, functions={"weather:lookup": lookup_weather})


def main(prompt: str = "What's the weather in Berlin?") -> RunResult:
    """Run the example agent once and print the transcript and the ``RunResult``."""
    settings = Settings()
    _, label = example_model(settings)
    app = build_app(settings)
    thread_key = f"example-{uuid.uuid4().hex[:8]}"
    print(f"model:    {label}")
    print(f"database: SQLite at {settings.data_dir / 'lunora.db'}   dispatch: in-process")
    handle = app.agents.weather.run(input=prompt, thread_key=thread_key, title="lunora example")
    result = app.agents.weather.wait(handle.id, timeout=120)
    print(f"\ntranscript of thread {thread_key!r}:")
    for message in app.threads.messages(thread_key, trusted=True):
        text = message.content or ""
        for call in message.tool_calls or []:
            fn = call.get("function", {})
            text += f" -> {fn.get('name')}({fn.get('arguments')})"
        print(f"  {message.role:>9}: {text.strip()}")
    print(f"\nresult: status={result.status} stopped={result.stopped} turns={result.turns} "
          f"tokens in/out={result.usage.input_tokens}/{result.usage.output_tokens}")
    print(f"  text: {result.text}")
    if result.error:
        print(f"  error: {result.error}", file=sys.stderr)
    if result.status != "completed":
        raise SystemExit(1)
    return result
