"""The shared tail of the helpers that run a command in its own process group with its output in a log
file (``lunora api`` in ``lunora_jobs.api.testing``, ``celery worker`` / ``beat`` in ``workers.testing``)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from pathlib import Path
from typing import IO, Any


class LoggedChildProcess:
    """A child process leading its own process group, its output appended to ``log_path``."""

    log_path: Path
    proc: subprocess.Popen[bytes] | None
    _log: IO[bytes] | None

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM the process group, SIGKILL it after ``timeout``; any child left behind is killed too."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        # Children left behind by a dead parent (a prefork pool, uvicorn's workers) would go on running.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self._close_log()

    def log(self) -> str:
        """The process's output so far."""
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def _close_log(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None

    def __exit__(self, *_: Any) -> None:
        self.stop()
