"""Model helpers usable from any function or tool: text, streamed text, objects, embeddings.

Each takes ``model`` as agents do (``"provider:model"`` through the same registry, a ``Model``, or a
callable), and returns usage and a finish reason. Streams are read with ``for`` or ``async for``.

Example::

    from lunora_jobs.ai import generate_text, stream_text, generate_object, stream_object, embed, embed_many

    generate_text(model="openai:gpt-4o-mini", prompt="Say hi").text
    generate_object(model="anthropic:claude-sonnet-4-5", schema=Sentiment, prompt=review).object
    embed_many(model="openai:text-embedding-3-small", values=["a", "b"]).embeddings
"""

from lunora_jobs.ai.embeddings import embed, embed_many
from lunora_jobs.ai.objects import ObjectStream, generate_object, stream_object
from lunora_jobs.ai.results import (
    EmbedManyResult,
    EmbedResult,
    ObjectResult,
    StepResult,
    TextResult,
    ToolResult,
)
from lunora_jobs.ai.text import TextStream, generate_text, stream_text

__all__ = [
    "EmbedManyResult",
    "EmbedResult",
    "ObjectResult",
    "ObjectStream",
    "StepResult",
    "TextResult",
    "TextStream",
    "ToolResult",
    "embed",
    "embed_many",
    "generate_object",
    "generate_text",
    "stream_object",
    "stream_text",
]
