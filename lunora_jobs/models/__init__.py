"""The model seam: the ``Model`` protocol, the OpenAI-compatible adapter, scripted/offline models, registry.

Example::

    from lunora_jobs.models import resolve_model, ScriptedModel, final_turn
    model = resolve_model("offline")          # or "openai:gpt-4o-mini", a Model, or a callable(settings)
"""

from lunora_jobs.models.base import FinishReason, Model, ModelTurn, ToolCall, ToolChoice, ToolSpec, Usage
from lunora_jobs.models.messages import assistant_message, count_assistant_turns, message_text, tool_message
from lunora_jobs.models.offline import OfflineModel
from lunora_jobs.models.output import OutputSpec
from lunora_jobs.models.registry import register_model_provider, registered_providers, resolve_model
from lunora_jobs.models.scripted import ScriptedModel, final_turn, tool_call_turn, tool_calls_turn

__all__ = [
    "FinishReason",
    "Model",
    "ModelTurn",
    "OfflineModel",
    "OutputSpec",
    "ScriptedModel",
    "ToolCall",
    "ToolChoice",
    "ToolSpec",
    "Usage",
    "assistant_message",
    "count_assistant_turns",
    "final_turn",
    "message_text",
    "register_model_provider",
    "registered_providers",
    "resolve_model",
    "tool_call_turn",
    "tool_calls_turn",
    "tool_message",
]
