"""``lunora ingress`` as a real process, plus the Celery workers and stand-ins around it.

``IngressProcess`` runs ``python -m lunora_jobs.cli ingress`` (uvicorn serving the webhook routes and
the SMTP listener) in its own process group on free loopback ports and waits for ``/healthz``.
``Deployment`` is one test's world: a fresh PostgreSQL database, a private queue on the test's
private Redis, the stand-ins for Slack and Discord, an SMTP sink for email replies, and the
environment every process loads ``channels_e2e_app:build_app`` with.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Any

import httpx
from channel_standins import DiscordStandIn, SlackStandIn
from channels_mail import TRUSTED
from channels_signing import DISCORD_PUBLIC_HEX, SLACK_SECRET
from polling import wait_for
from ports import free_port
from private_redis import PrivateRedis

from workers.testing import WorkerProcess

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
SLACK_TOKEN = "xoxb-test"
TERMINAL = ("completed", "failed", "cancelled")


class IngressProcess:
    """One ``lunora ingress`` process; ``url`` and ``smtp_port`` once started."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self.port, self.smtp_port = free_port(), free_port()
        self.env = {**os.environ, **env}
        self._dir = Path(tempfile.mkdtemp(prefix="lunora-ingress-"))
        self.log_path = self._dir / "ingress.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 30.0) -> IngressProcess:
        self._log = self.log_path.open("ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "lunora_jobs.cli", "ingress", "--host", "127.0.0.1",
             "--port", str(self.port), "--smtp-port", str(self.smtp_port), "--log-level", "warning"],
            env=self.env, stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True,
        )
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"ingress exited with {self.proc.returncode}:\n{self.log()}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(self.url + "/healthz", timeout=1).status_code == 200:
                    return self
            if time.monotonic() > deadline:
                self.stop()
                raise TimeoutError(f"ingress not ready after {timeout}s:\n{self.log()}")
            time.sleep(0.1)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        if self._log is not None:
            self._log.close()
            self._log = None

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""


class Deployment:
    """Database + broker + stand-ins + the processes a test starts (all stopped by ``close``)."""

    def __init__(self, database_url: str, redis: PrivateRedis, smtp_relay_port: int) -> None:
        self.prefix = "chan-" + uuid.uuid4().hex[:8]
        self.queue = self.prefix + "-q"
        self.redis = redis
        self.slack = SlackStandIn(SLACK_TOKEN).start()
        self.discord = DiscordStandIn().start()
        self.env = {
            "LUNORA_APP": "channels_e2e_app:build_app",
            "LUNORA_DATABASE_URL": database_url,
            "CELERY_BROKER_URL": redis.url(1),
            "LUNORA_QUEUE": self.queue,
            "E2E_SLACK_SECRET": SLACK_SECRET,
            "E2E_SLACK_TOKEN": SLACK_TOKEN,
            "E2E_DISCORD_KEY": DISCORD_PUBLIC_HEX,
            "LUNORA_SLACK_API_URL": self.slack.api_url,
            "LUNORA_DISCORD_API_URL": self.discord.url,
            "LUNORA_EMAIL_AUTHSERV_ID": TRUSTED,
            "LUNORA_SMTP_RELAY": f"127.0.0.1:{smtp_relay_port}",
            "LUNORA_EMAIL_FROM": "support@ours.test",
            "LUNORA_REPLY_TIMEOUT_S": "2",
            "PYTHONPATH": os.pathsep.join([str(HERE), str(ROOT), os.environ.get("PYTHONPATH", "")]),
        }
        self.ingresses: list[IngressProcess] = []
        self.workers: list[WorkerProcess] = []
        self._app: Any = None

    @property
    def app(self) -> Any:
        """The test's own view of the app (same database), for reading runs and steps."""
        if self._app is None:
            from lunora_jobs.config import Settings
            from lunora_jobs.runtime import Lunora
            from lunora_jobs.store.sql import create_store

            self._app = Lunora(store=create_store(self.env["LUNORA_DATABASE_URL"]),
                               settings=Settings(database_url=self.env["LUNORA_DATABASE_URL"]))
        return self._app

    def start_ingress(self) -> IngressProcess:
        ingress = IngressProcess(self.env)
        self.ingresses.append(ingress)
        return ingress.start()

    def start_worker(self) -> WorkerProcess:
        worker = WorkerProcess(self.queue, self.env, concurrency=1, name=f"{self.prefix}-{len(self.workers)}")
        self.workers.append(worker)
        return worker.start()

    def runs(self, agent: str | None = None) -> list[Any]:
        return [r for r in self.app.store.list_runs(limit=500) if agent is None or r.agent == agent]

    def wait_for(self, what: str, check: Callable[[], Any], timeout: float = 60.0) -> Any:
        """Poll ``check`` until it returns something truthy; fail with the processes' logs."""
        return wait_for(what, check, timeout=timeout, explain=self.logs)

    def logs(self) -> str:
        parts = [f"--- ingress {i.port}\n{i.log()[-3000:]}" for i in self.ingresses]
        parts += [f"--- worker {w.name}\n{w.log()[-3000:]}" for w in self.workers]
        return "\n".join(parts)

    def close(self) -> None:
        for ingress in self.ingresses:
            ingress.stop()
        for worker in self.workers:
            worker.stop(timeout=5)
        if self._app is not None:
            self._app.close()
        self.slack.close()
        self.discord.close()
        broker = self.redis.client(1)
        broker.delete(self.queue, f"_kombu.binding.{self.queue}", f"_kombu.binding_permanent.{self.queue}")
        for tag, payload in broker.hscan_iter("unacked"):
            if self.queue.encode() in payload:
                broker.hdel("unacked", tag)
                broker.zrem("unacked_index", tag)
