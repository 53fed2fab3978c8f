"""The ``Lunora`` app object, its clients and ``load_app``."""

from lunora_jobs.engine.start import RunHandle
from lunora_jobs.runtime.agents_client import AgentClient, AgentsNamespace
from lunora_jobs.runtime.app import Lunora, load_app
from lunora_jobs.runtime.approvals_api import ApprovalsAPI
from lunora_jobs.runtime.result import RunResult
from lunora_jobs.runtime.runs_api import RunsAPI
from lunora_jobs.runtime.threads_api import ThreadsAPI

__all__ = [
    "AgentClient",
    "AgentsNamespace",
    "ApprovalsAPI",
    "Lunora",
    "RunHandle",
    "RunResult",
    "RunsAPI",
    "ThreadsAPI",
    "load_app",
]
