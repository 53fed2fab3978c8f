"""A step's path through the engine: claim → work → complete → plan → dispatch.

``Engine.execute(run_id, step)`` runs one step through the stages in order (``runner.py``); each
stage is a module of its own and the step's kind (``engine/kinds``) fills in what differs.
``replan`` is the plan and dispatch stages on their own, for the sweep and approvals' repairs.
"""

from lunora_jobs.engine.pipeline.runner import Engine, StepOutcome, replan

__all__ = ["Engine", "StepOutcome", "replan"]
