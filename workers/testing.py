"""Start and stop real worker processes from tests and benchmarks.

``WorkerProcess`` runs ``python -m celery -A workers worker`` in its own process group, waits until
it is consuming (the worker writes ``LUNORA_WORKER_READY_FILE`` — the same file a Kubernetes
readiness probe can watch), and can kill the whole group with SIGKILL to simulate a crashed machine,
or only a pool child to simulate an OOM-killed task process.

Example::

    worker = WorkerProcess(queue="q-test", env={"LUNORA_APP": "myapp:app", ...}).start()
    try:
        ...                      # dispatch runs, poll the store
        worker.kill()            # SIGKILL the worker and its pool, mid-step
    finally:
        worker.stop()
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO

from lunora_jobs._child_process import LoggedChildProcess

READY_FILE_ENV = "LUNORA_WORKER_READY_FILE"


class WorkerProcess(LoggedChildProcess):
    """One ``celery worker`` subprocess (prefork pool, unless ``pool`` names another) consuming ``queue``.

    ``app_module`` is Celery's ``-A`` (a module exposing a Celery app configured like ``workers``).
    ``pool="solo"`` runs the tasks in the worker process itself (no hand-off to a pool process; the
    step time limits are then ``workers.solo_limits``'s).
    """

    def __init__(
        self,
        queue: str,
        env: Mapping[str, str],
        *,
        concurrency: int = 2,
        loglevel: str = "WARNING",
        name: str | None = None,
        extra_args: Sequence[str] = (),
        app_module: str = "workers",
        pool: str = "prefork",
    ) -> None:
        self.queue = queue
        self.pool = pool
        self.app_module = app_module
        self.concurrency = concurrency
        self.loglevel = loglevel
        self.name = name or f"{queue}-{os.getpid()}-{time.monotonic_ns()}"
        self.extra_args = list(extra_args)
        self._dir = Path(tempfile.mkdtemp(prefix="lunora-worker-"))
        self.ready_file = self._dir / "ready"
        self.log_path = self._dir / "worker.log"
        self.env = {**os.environ, **env, "LUNORA_QUEUE": queue, READY_FILE_ENV: str(self.ready_file)}
        self.proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    def command(self) -> list[str]:
        """The worker command line (what ``lunora worker`` runs)."""
        return [
            sys.executable, "-m", "celery", "-A", self.app_module, "worker", "-Q", self.queue,
            "-c", str(self.concurrency), "--pool", self.pool, "-n", f"{self.name}@%h",
            "--without-gossip", "--without-mingle", "--without-heartbeat", "-l", self.loglevel,
            *self.extra_args,
        ]

    def start(self, timeout: float = 30.0) -> WorkerProcess:
        """Start the worker and wait until it consumes; raise with its log if it does not."""
        self.ready_file.unlink(missing_ok=True)
        self._log = self.log_path.open("ab")
        self.proc = subprocess.Popen(
            self.command(), env=self.env, stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True
        )
        deadline = time.monotonic() + timeout
        while not self.ready_file.exists():
            if self.proc.poll() is not None:
                raise RuntimeError(f"worker exited with {self.proc.returncode}:\n{self.log()}")
            if time.monotonic() > deadline:
                self.kill()
                raise TimeoutError(f"worker not ready after {timeout}s:\n{self.log()}")
            time.sleep(0.05)
        return self

    @property
    def pid(self) -> int:
        """The main worker process id (also its process group id)."""
        if self.proc is None:
            raise RuntimeError("worker not started")
        return self.proc.pid

    def pool_pids(self) -> list[int]:
        """Process ids of the prefork pool children (read from /proc)."""
        children = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if int(fields[1]) == self.pid:
                children.append(int(stat.parent.name))
        return sorted(children)

    def kill(self) -> None:
        """SIGKILL the worker's whole process group (a machine crash: nothing is acked or requeued)."""
        if self.proc is None or self.proc.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.pid, signal.SIGKILL)
        self.proc.wait(timeout=10)
        self._close_log()

    def stop(self, timeout: float = 15.0) -> None:
        """Warm shutdown (SIGTERM), falling back to SIGKILL of the group after ``timeout``."""
        super().stop(timeout)

    def __enter__(self) -> WorkerProcess:
        return self.start() if self.proc is None else self


class BeatProcess(WorkerProcess):
    """A ``celery beat`` subprocess sending the sweep / dispatch-due ticks to ``queue``.

    Its schedule file lives in a private temporary folder; ``LUNORA_SWEEP_INTERVAL`` in ``env`` sets
    the tick. ``start()`` returns once the process runs (beat has no readiness signal to wait for).
    """

    def command(self) -> list[str]:
        """The beat command line (what ``lunora beat`` runs)."""
        return [
            sys.executable, "-m", "celery", "-A", self.app_module, "beat",
            "-s", str(self._dir / "beat-schedule"), "--max-interval", "1", "-l", self.loglevel,
            *self.extra_args,
        ]

    def start(self, timeout: float = 30.0) -> BeatProcess:
        """Spawn beat in its own process group."""
        self._log = self.log_path.open("ab")
        self.proc = subprocess.Popen(
            self.command(), env=self.env, stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True
        )
        return self
