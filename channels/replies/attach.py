"""``attach(app)``: what a process needs to run channel replies for ``app``.

``Lunora`` calls it by name (``lunora_jobs`` never imports ``channels``, as it never imports
Celery) when one of its agents declares ``on_inbound`` or ``on_email``: every process that loads
the app — workers, the ingress, an embedded app — then knows the ``reply:`` step kind, and the
app's run ends dispatch replies.
"""

from __future__ import annotations

import weakref
from typing import Any

from channels.replies.hooks import ReplyHooks
from channels.replies.kind import ReplyStep
from lunora_jobs.engine.kinds import register_step_kind

_ATTACHED: weakref.WeakSet[Any] = weakref.WeakSet()
_KIND = ReplyStep()


def attach(app: Any) -> None:
    """Register the reply step kind (once per process) and the reply hooks (once per app)."""
    register_step_kind(_KIND)
    if app in _ATTACHED:
        return
    agents = frozenset(name for name, agent in app.registry.items()
                       if agent.on_inbound or agent.on_email is not None)
    app.hooks.add(ReplyHooks(app.deps, agents))
    _ATTACHED.add(app)
