"""Running one command in the reference sandbox: a subprocess with no network, resource limits,
a timeout and an output cap, in the sandbox's workspace.

Isolation, each part checked by the tests:

- network: the command runs in a new network namespace (``unshare --net``: no interface is up,
  loopback included), so it can reach nothing, not even the host's own services;
- privileges: when the server runs as root the command runs as ``nobody`` (uid/gid 65534);
- resources: CPU seconds, address space, file size and open files are capped (``setrlimit``); the
  whole process group is killed at the timeout;
- output: stdout and stderr keep their first ``max_output`` bytes each, the rest is drained and
  dropped (``truncated``);
- environment: only ``PATH``, ``HOME`` (the workspace) and ``LANG`` are passed.
"""

from __future__ import annotations

import os
import resource
import shutil
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from typing import IO

NOBODY = 65534


class IsolationUnavailableError(RuntimeError):
    """The machine cannot make a network namespace (no ``unshare``, or no privilege for it)."""


@dataclass(frozen=True)
class ExecResult:
    """What ``POST /exec`` answers."""

    exit_code: int | None
    stdout: str
    stderr: str
    timed_out: bool
    truncated: bool
    duration_ms: int


@dataclass(frozen=True)
class Limits:
    """The caps on one command."""

    timeout_s: float = 10.0
    max_output: int = 64_000
    memory_bytes: int = 512 * 1024 * 1024
    file_bytes: int = 16 * 1024 * 1024
    open_files: int = 256


def network_namespace_prefix() -> list[str]:
    """``["unshare", "--net", "--"]`` once checked to work here; ``IsolationUnavailableError`` if not."""
    unshare = shutil.which("unshare")
    if unshare is None:
        raise IsolationUnavailableError("`unshare` (util-linux) is not installed: cannot cut the network")
    probe = subprocess.run([unshare, "--net", "--", "true"], capture_output=True, timeout=10, check=False)
    if probe.returncode != 0:
        raise IsolationUnavailableError(
            "`unshare --net` failed (it needs root or CAP_SYS_ADMIN): "
            + probe.stderr.decode(errors="replace").strip()
        )
    return [unshare, "--net", "--"]


def run_command(argv: list[str], workspace: str, limits: Limits, prefix: list[str]) -> ExecResult:
    """Run ``argv`` in ``workspace`` under ``limits``, inside the isolation ``prefix`` builds."""
    drop = os.geteuid() == 0
    cpu = max(1, int(limits.timeout_s) + 1)

    def limit() -> None:  # runs in the child before exec
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
        resource.setrlimit(resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes))
        resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_bytes, limits.file_bytes))
        resource.setrlimit(resource.RLIMIT_NOFILE, (limits.open_files, limits.open_files))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": workspace, "LANG": "C.UTF-8"}
    # unshare needs root to make the namespace, so the privilege drop happens after it: setpriv
    # (util-linux) switches to nobody inside the new namespace, right before the command.
    setpriv = shutil.which("setpriv") if drop else None
    user = [setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--"] if setpriv else []
    started = time.monotonic()
    proc = subprocess.Popen(
        [*prefix, *user, *argv], cwd=workspace, env=env, stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=limit, start_new_session=True,
    )
    out, err = _Capped(proc.stdout, limits.max_output), _Capped(proc.stderr, limits.max_output)
    timed_out = False
    try:
        proc.wait(timeout=limits.timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    out.join()
    err.join()
    return ExecResult(
        exit_code=None if timed_out else proc.returncode, stdout=out.text(), stderr=err.text(),
        timed_out=timed_out, truncated=out.truncated or err.truncated,
        duration_ms=int((time.monotonic() - started) * 1000),
    )


class _Capped:
    """Reads a pipe to its end on a thread, keeping the first ``cap`` bytes."""

    def __init__(self, pipe: IO[bytes] | None, cap: int) -> None:
        self.cap, self.data, self.truncated = cap, bytearray(), False
        self._thread = threading.Thread(target=self._drain, args=(pipe,), daemon=True)
        self._thread.start()

    def _drain(self, pipe: IO[bytes] | None) -> None:
        if pipe is None:
            return
        with pipe:
            while chunk := pipe.read(65536):
                room = self.cap - len(self.data)
                if len(chunk) > room:
                    self.truncated = True
                self.data += chunk[: max(room, 0)]

    def join(self) -> None:
        self._thread.join(timeout=10)

    def text(self) -> str:
        return self.data.decode("utf-8", errors="replace")
