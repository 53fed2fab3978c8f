"""Body of a spawned process that starts a run on the shared thread at the same instant as the others."""

from __future__ import annotations

from typing import Any


def start_worker(thread_key: str, agent: str, worker: int, barrier: Any, results: Any) -> None:
    """Build the app (env from the parent), wait for everyone, call ``run``; report the outcome."""
    try:
        import hitl_app

        from lunora_jobs.errors import ConflictError

        app = hitl_app.build_app()
        app.store.get_thread(thread_key)  # connect first: race the run call, not the connect
        barrier.wait(timeout=240)  # a loaded CI machine may take long to spawn twenty interpreters
        try:
            handle = app.agents[agent].run(input=f"block w{worker}", thread_key=thread_key, owner="u7")
            results.put(("owner", handle.id))
        except ConflictError as exc:
            results.put(("conflict", str(exc)))
    except BaseException as exc:
        results.put(("error", f"{type(exc).__name__}: {exc}"))  # the test fails and shows it
