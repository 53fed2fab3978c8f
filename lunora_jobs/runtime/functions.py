"""Calling a registered function: what ``ctx.run(path, args)`` and ``function_tool`` reach.

A function is registered under a ``"module:name"`` path (``Lunora(functions={path: fn})``), or found
by importing that path. A plain callable takes the args object; a Celery task (anything with
Celery's ``apply_async`` and ``run``) takes them as keyword arguments, the way ``task.delay(**args)``
would. The task's body runs here, inside the tool step that called it (not as a second message on
the broker for a worker to wait on): the tool step's ledger row memoizes its result, so a replayed
or taken-over step does not run it again once the step finished.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

from lunora_jobs.errors import ConfigurationError, ToolError


def is_celery_task(fn: Any) -> bool:
    """Whether ``fn`` is a Celery task (duck-typed: ``lunora_jobs`` never imports Celery)."""
    return callable(getattr(fn, "apply_async", None)) and callable(getattr(fn, "run", None))


def call_function(fn: Callable[..., Any], path: str, args: Mapping[str, Any]) -> Any:
    """Call the function registered as ``path`` with ``args``."""
    if not is_celery_task(fn):
        return fn(args)
    if not isinstance(args, Mapping):
        raise ToolError(f"the task {path!r} takes keyword arguments: send an object, "
                        f"not {type(args).__name__}")
    try:
        task: Any = fn
        inspect.signature(task.run).bind(**args)
    except TypeError as exc:  # the arguments do not fit the task's signature: the model can fix them
        raise ToolError(f"the task {path!r} does not take these arguments: {exc}") from None
    except ValueError:
        pass  # no signature to check (a builtin): the call itself says
    return fn(**args)


def missing_function(path: str) -> ConfigurationError:
    """The error for a path no registration or import resolves."""
    return ConfigurationError(
        f"no function registered for {path!r}; pass Lunora(functions={{{path!r}: callable or Celery task}})."
    )
