"""Named exceptions a user can hit. Each message says what to do about it."""

from __future__ import annotations


class LunoraError(Exception):
    """Base class of every error Lunora Jobs raises on purpose."""


class ConfigurationError(LunoraError, ValueError):
    """A declaration or setting is invalid (raised at declaration time, not at run time)."""


class ConflictError(LunoraError):
    """A thread already has a run in flight, or a decision contradicts an earlier one."""


class OwnerRequiredError(ConflictError):
    """A run was started without an owner on a thread that has one. Identity fails closed: pass
    ``owner=`` (the verified owner of the thread), or ``as_system=True`` when trusted server code
    continues the thread on its owner's behalf."""


class RunInputError(LunoraError, ValueError):
    """A run was started with ``input=None``. Pass the user message (a string, or any JSON-able value)
    as ``input=``; an empty string is allowed when there is genuinely nothing to say."""


class NotFoundError(LunoraError, LookupError):
    """No such thread / run / step — or one the caller may not see (the two are indistinguishable)."""


class StepExhaustedError(LunoraError):
    """A step was attempted ``max_attempts`` times without finishing; the run is failed with it."""


class AgentChangedError(LunoraError):
    """A deploy changed an agent mid-run so that the run cannot finish on the shape it started with
    (a tool it started with is gone or changed); the run fails with it. Start the run again."""


class RunTimeoutError(LunoraError):
    """A run outlived its agent's ``run_timeout_s``; the run is failed with it (its error text starts
    ``RunTimeoutError:``). Raise the limit, or retry the run: ``app.runs.retry(run_id)`` gives it a
    fresh time budget."""


class RunNotFailedError(ConflictError):
    """``app.runs.retry`` was asked to resume a run that is not ``failed`` (still running, waiting,
    completed or cancelled). Only a failed run can be retried; start a new run otherwise."""


class UnknownAgentError(LunoraError):
    """No live worker declares the run's agent: nobody claimed the run within ``LUNORA_UNKNOWN_AGENT_S``
    and the sweep failed it (a deploy forgot the agent, or no worker pool consumes its queue). Add
    the agent to the app named by ``LUNORA_APP`` on the workers, then start the run again."""


class LeaseLostError(LunoraError):
    """A step's lease was taken over (its fencing generation moved on); the result was not applied."""


class IdentityTooLongError(LunoraError, ValueError):
    """An identity field (owner, actor, tenant, key) exceeds 255 characters."""


# --- agent declaration, tools and models -------------------------------------------------------


class InvalidAgentOptionError(ConfigurationError):
    """An option passed to ``define_agent`` is invalid; the message names the option and the fix."""


class InvalidRetryPolicyError(InvalidAgentOptionError):
    """``define_agent(retry=...)`` holds a bad value; the message names the field and the fix."""


class OptionNotAvailableError(InvalidAgentOptionError):
    """An option the API declares is not implemented yet: passing it would otherwise be silently
    ignored, so it is refused. The message says what to use meanwhile."""


class DuplicateToolError(ConfigurationError):
    """Two tools (the agent's own, or from skills) share one name; rename one of them."""


class InvalidToolError(ConfigurationError):
    """A tool declaration is invalid (bad name, schema, or a non-callable execute)."""


class UnknownModelProviderError(ConfigurationError, LookupError):
    """A ``"provider:model"`` string names a provider nobody registered."""


class ToolInputError(LunoraError, ValueError):
    """A tool call's input does not match the tool's input schema.

    The message is written for the model: the next turn sees it as the tool's result and can retry.
    """


class ToolError(LunoraError, RuntimeError):
    """A tool failed in a way the model should read and act on (an MCP tool's own error result, a bad
    reference in a code script): the tool step completes at once with the message as an error result.

    Raise it from a tool's ``execute`` for failures a retry cannot fix; any other exception is retried
    through the ledger up to the agent's ``max_attempts`` first.
    """


# --- MCP servers (lunora_jobs.toolbox.mcp) ---------------------------------------------------


class McpUnavailableError(ConfigurationError, ImportError):
    """``mcp_tools`` needs the official MCP SDK: ``pip install 'lunora-jobs[mcp]'``."""


class McpConnectionError(LunoraError, ConnectionError):
    """An MCP server could not be started or reached, or its session broke. A tool step that hits it
    is retried through the ledger; at declaration (``mcp_tools``) it says which server and how to fix it."""


class McpToolNotFoundError(ConfigurationError, LookupError):
    """``mcp_tools(only=[...])`` names a tool the server does not list; the message lists what it does."""


class McpToolError(ToolError):
    """An MCP server answered a tool call with an error (``isError`` or a JSON-RPC error): the model
    reads the server's message as the call's result."""


# --- sandbox tools (lunora_jobs.toolbox.sandbox) --------------------------------------------


class SandboxPathError(LunoraError, ValueError):
    """A path given to ``fs_tool`` would leave its root (``..``, absolute, a symlink out) or is
    malformed (NUL, control characters, over-long names); the tool refuses it and the model reads why."""


class S3UnavailableError(ConfigurationError, ImportError):
    """``S3Store`` needs boto3: ``pip install 'lunora-jobs[s3]'`` (or pass ``client=``)."""


class BrowserUnavailableError(ConfigurationError):
    """``browser_tool`` needs Playwright (``pip install 'lunora-jobs[browser]'``) and a Chromium at its
    ``executable_path`` (Debian: ``apt-get install chromium``); the message says which is missing."""


class OutputParseError(LunoraError, ValueError):
    """The model's final answer is not valid JSON for the agent's ``output`` schema."""


class ScriptExhaustedError(LunoraError, RuntimeError):
    """A ``ScriptedModel`` was asked for more turns than its script holds; add turns to the script."""


# --- model helpers (lunora_jobs.ai) and providers --------------------------------------------


class ProviderUnavailableError(ConfigurationError, ImportError):
    """A model provider's optional extra is not installed; the message names the pip command."""


class ModelCapabilityError(ConfigurationError):
    """The resolved model cannot do what was asked (e.g. embed); the message names models that can."""


class ModelInputError(LunoraError, ValueError):
    """An input a model call cannot take (e.g. an empty text to embed); the message says what to drop."""


class ModelResponseError(LunoraError, RuntimeError):
    """A provider answered with something unusable (wrong number of embeddings, no content)."""


class ObjectGenerationError(OutputParseError):
    """``generate_object`` / ``stream_object`` got no answer matching the schema, repairs included.

    ``text`` is the model's last answer, ``usage`` what all attempts cost.
    """

    def __init__(self, message: str, *, text: str | None = None, usage: object = None) -> None:
        super().__init__(message)
        self.text = text
        self.usage = usage


class ToolApprovalUnavailableError(ConfigurationError):
    """A tool call needs approval, but ``generate_text`` runs tools inline with no one to ask.

    Run the tool through an agent (which waits for the decision), or drop ``needs_approval``.
    """


class ProposalExpiredError(ConflictError):
    """An action proposal's time to decide ran out before the decision; the action will not run.

    Ask the agent again (a new run proposes it anew) if it is still wanted.
    """


class ProposalScopeError(ConfigurationError):
    """An action needs an independent approval but its run has no owner to scope the proposal to.

    Start runs of independent-mode agents with ``owner=`` (the verified caller), so a proposal is never
    visible to, or decided by, an anonymous caller.
    """


class StreamStateError(LunoraError, RuntimeError):
    """A stream was used out of order: its result read before it ended (iterate it, or call ``result()`` /
    ``await aresult()``), or one stream read both with ``for`` and ``async for``."""


class QuotaExceededError(LunoraError):
    """A run's actor or tenant is at or over a usage quota (``Lunora(quotas=[...])``): a new run is
    refused at start (nothing is recorded) and a running one fails at its next turn. Wait for the
    window to reset (``app.governance.quota_status(...)`` says when), or raise the quota."""

    def __init__(self, message: str, *, statuses: tuple[object, ...] = ()) -> None:
        super().__init__(message)
        self.statuses = statuses
        """The ``QuotaStatus`` records that are exceeded."""


class QuotaUnavailableError(LunoraError):
    """Quotas are configured but the usage they limit could not be read (the database did not answer):
    the check fails closed, so the run does not start (or its turn does not call the model; the step is
    retried with backoff). Check the database (``lunora doctor``) and try again."""


# Retrieval errors live in ``rag.errors`` (``rag`` does not import this package).


# --- production settings ----------------------------------------------------------------------


class MissingModelKeyError(ConfigurationError):
    """Outside the embedded default, an agent's model needs a key that is not set: the worker would
    otherwise run the offline model (``model="auto"``) or fail at the first turn (``openai:...``)."""


class UnsupportedPoolError(ConfigurationError):
    """A worker was started on a Celery pool other than prefork or solo (``threads``, ``gevent``,
    ``eventlet``, a custom one): its steps would run without the time limits that end a hung tool."""


class MissingDatabaseUrlError(ConfigurationError):
    """A broker is configured but ``LUNORA_DATABASE_URL`` is not: every worker would keep its own
    SQLite file, and no two processes would see the same runs."""
