"""``LUNORA_APP=myproj.agents:app lunora worker`` run from the project directory imports ``myproj``
without ``PYTHONPATH``, the way ``celery -A`` finds an app in the working directory.

The worker is the real ``lunora`` console script (not ``python -m``, which would put the working
directory on ``sys.path`` by itself) started from a temporary project directory; the project is on no
path but that. The run it executes is started by the test process, which loads the same app the
same way (``load_app`` from the working directory, as the CLI, beat, API and ingress do).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest
import redis

from lunora_jobs.errors import ConfigurationError
from lunora_jobs.runtime import load_app
from workers.testing import WorkerProcess

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[3]  # where lunora_jobs and workers live, not the user's project
AGENTS = '''
from lunora_jobs import Lunora, define_agent

from myproj.greeting import INSTRUCTIONS  # a sibling module of the user's package

echo = define_agent(name="echo", instructions=INSTRUCTIONS, model="offline")
app = Lunora.from_env(agents=[echo])
'''


class ConsoleScriptWorker(WorkerProcess):
    """``lunora worker``: the console script a user runs, in whatever directory the test is in."""

    def command(self) -> list[str]:
        """The ``lunora worker`` command line for this worker's queue."""
        lunora = Path(sys.executable).with_name("lunora")
        return [
            str(lunora), "worker", "-Q", self.queue, "-c", "1", "--pool", "prefork",
            "-n", f"{self.name}@%h", "--without-gossip", "--without-mingle", "--without-heartbeat",
            "-l", "INFO",
        ]


def _project(root: Path) -> Path:
    package = root / "myproj"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "greeting.py").write_text('INSTRUCTIONS = "Answer briefly."\n')
    (package / "agents.py").write_text(AGENTS)
    return root


@pytest.fixture
def in_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A user's project directory as the working directory, on no path; its modules forgotten after."""
    project = _project(tmp_path / "proj")
    monkeypatch.chdir(project)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(project))])
    yield project
    for name in [m for m in sys.modules if m == "myproj" or m.startswith("myproj.")]:
        del sys.modules[name]


def test_a_console_script_worker_runs_the_project_found_in_its_working_directory(
    in_project: Path, tmp_path: Path, redis_url: str, redis_prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    queue = f"{redis_prefix}-q"
    env = {
        "LUNORA_APP": "myproj.agents:app",
        "LUNORA_QUEUE": queue,
        "CELERY_BROKER_URL": redis_url,
        "LUNORA_DATABASE_URL": f"sqlite:///{tmp_path / 'lunora.db'}",
        "LUNORA_DATA_DIR": str(tmp_path / "data"),
        "PYTHONPATH": str(ROOT),  # the installed library; the project itself is on no path
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "LUNORA_REDIS_URL"):
        monkeypatch.delenv(name, raising=False)

    app = load_app()  # the test process: LUNORA_APP from the working directory, like `lunora` commands
    app.store.ensure_tables()
    worker = ConsoleScriptWorker(queue, env, name=f"{redis_prefix}-w").start(timeout=60)
    try:
        handle = app.agents.echo.run(input="hello", thread_key="t1")
        deadline = time.monotonic() + 60
        while (run := app.store.get_run(handle.id)) is None or run.status not in ("completed", "failed"):
            assert time.monotonic() < deadline, f"run not finished: {run}\n{worker.log()[-4000:]}"
            time.sleep(0.1)
        assert run.status == "completed", worker.log()[-4000:]
        assert "No module named 'myproj'" not in worker.log()
    finally:
        worker.stop()
        app.close()
        client = redis.Redis.from_url(redis_url)
        client.delete(queue, f"_kombu.binding.{queue}", f"_kombu.binding_permanent.{queue}")
        client.close()


def test_a_module_not_in_the_working_directory_names_the_fix(in_project: Path) -> None:
    with pytest.raises(ConfigurationError, match=r"No module named 'notmyproj'.*run from the directory"):
        load_app("notmyproj.agents:app")
