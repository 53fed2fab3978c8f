"""Lunora Jobs: durable AI agents on a Celery worker fleet.

Every LLM turn and every tool call runs as its own idempotent step, memoized in a step ledger in
the database, so a crashed worker, a lost broker message or a redeploy resumes a run without
re-running (or re-paying for) a finished step.

Example::

    from lunora_jobs import Lunora, ToolContext, define_agent, tool

    @tool
    def get_weather(city: str, ctx: ToolContext) -> dict:
        \"\"\"Look up the current weather for a city.\"\"\"
        return ctx.run("weather:lookup", {"city": city})

    weather = define_agent(name="weather", instructions="Answer weather questions.", tools=[get_weather])
    app = Lunora.from_env(agents=[weather], functions={"weather:lookup": lambda args: {"temp_c": 21}})
    handle = app.agents.weather.run(input="Weather in Berlin?", thread_key="t1")
    app.agents.weather.wait(handle.id).text
"""

from lunora_jobs.agent import AgentDefinition, define_agent
from lunora_jobs.config import Settings
from lunora_jobs.engine.dispatch import Dispatcher, InProcessDispatcher, StepTask
from lunora_jobs.engine.locks import LocalLock, RedisLock
from lunora_jobs.engine.start import RunHandle
from lunora_jobs.errors import (
    ConfigurationError,
    ConflictError,
    LunoraError,
    NotFoundError,
    OptionNotAvailableError,
    OutputParseError,
    OwnerRequiredError,
    QuotaExceededError,
    QuotaUnavailableError,
    RunInputError,
    RunNotFailedError,
    RunTimeoutError,
    ScriptExhaustedError,
    StepExhaustedError,
    ToolError,
    ToolInputError,
    UnknownAgentError,
    UnknownModelProviderError,
)
from lunora_jobs.governance import Quota
from lunora_jobs.loop import (
    CompactionOptions,
    PrepareStepArgs,
    PrepareStepResult,
    RepairArgs,
    StepFinish,
    StopContext,
    has_tool_call,
    step_count_is,
)
from lunora_jobs.models import (
    Model,
    ModelTurn,
    OfflineModel,
    OutputSpec,
    ScriptedModel,
    ToolCall,
    Usage,
    final_turn,
    register_model_provider,
    resolve_model,
    tool_call_turn,
    tool_calls_turn,
)
from lunora_jobs.retry_policy import RetryPolicy
from lunora_jobs.runtime import AgentClient, Lunora, RunResult, load_app
from lunora_jobs.scheduling import CronEntry, CronJobs, cron_jobs
from lunora_jobs.skills import SkillDefinition, define_skill
from lunora_jobs.toolbox import (
    McpServer,
    agent_as_tool,
    browser_tool,
    code_tool,
    container_tool,
    fs_tool,
    mcp_tools,
)
from lunora_jobs.tools import ToolContext, ToolDefinition, define_tool, function_tool, tool

__all__ = [
    "AgentClient",
    "AgentDefinition",
    "CompactionOptions",
    "ConfigurationError",
    "ConflictError",
    "CronEntry",
    "CronJobs",
    "Dispatcher",
    "InProcessDispatcher",
    "LocalLock",
    "Lunora",
    "LunoraError",
    "McpServer",
    "Model",
    "ModelTurn",
    "NotFoundError",
    "OfflineModel",
    "OptionNotAvailableError",
    "OutputParseError",
    "OutputSpec",
    "OwnerRequiredError",
    "PrepareStepArgs",
    "PrepareStepResult",
    "Quota",
    "QuotaExceededError",
    "QuotaUnavailableError",
    "RedisLock",
    "RepairArgs",
    "RetryPolicy",
    "RunHandle",
    "RunInputError",
    "RunNotFailedError",
    "RunResult",
    "RunTimeoutError",
    "ScriptExhaustedError",
    "ScriptedModel",
    "Settings",
    "SkillDefinition",
    "StepExhaustedError",
    "StepFinish",
    "StepTask",
    "StopContext",
    "ToolCall",
    "ToolContext",
    "ToolDefinition",
    "ToolError",
    "ToolInputError",
    "UnknownAgentError",
    "UnknownModelProviderError",
    "Usage",
    "agent_as_tool",
    "browser_tool",
    "code_tool",
    "container_tool",
    "cron_jobs",
    "define_agent",
    "define_skill",
    "define_tool",
    "final_turn",
    "fs_tool",
    "function_tool",
    "has_tool_call",
    "load_app",
    "mcp_tools",
    "register_model_provider",
    "resolve_model",
    "step_count_is",
    "tool",
    "tool_call_turn",
    "tool_calls_turn",
]
