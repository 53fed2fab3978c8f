"""The image's roles come up as they would in the container, against the real Redis and PostgreSQL.

The wheel is built and installed into a fresh virtualenv; ``lunora db upgrade``, ``lunora beat`` and
``lunora worker`` then run as ``nobody`` from a read-only project folder with the Dockerfile's
environment. The run below is started with a dispatcher that drops its first step, so it can only
finish if beat's sweep tick reaches the worker and the sweep re-dispatches it: every role works.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
import redis
from image_support import ImageSandbox, wait_for

from lunora_jobs.agent import define_agent
from lunora_jobs.engine.dispatch import StepTask
from lunora_jobs.models.scripted import ScriptedModel, final_turn
from lunora_jobs.runtime import Lunora

pytestmark = [pytest.mark.integration, pytest.mark.slow]

REDIS_BASE = os.environ.get("LUNORA_TEST_REDIS_BASE", "redis://127.0.0.1:6379")
BROKER_DB = 14  # queues here are private per test (test_celery_binding uses the same db)

PROJECT_APP = '''\
"""The user's project inside the image: LUNORA_APP=imageproj:app."""
import os

from lunora_jobs.agent import define_agent
from lunora_jobs.models.scripted import ScriptedModel, final_turn
from lunora_jobs.runtime import Lunora

greeter = define_agent(
    name="greeter", instructions="Greet.", model=ScriptedModel([final_turn("hello from the image")])
)
app = Lunora.from_env(agents=[greeter], redis_prefix=os.environ["IMAGE_TEST_PREFIX"])
'''

EMBED_CHECK = '''\
from rag.defaults import default_embedder
embedder = default_embedder()
assert type(embedder).__name__ == "MiniLMEmbedder", embedder
print(len(embedder.embed_many(["a semantic embedding in the image"])[0]))
'''


class DroppingDispatcher:
    """Loses every dispatch, like a broker that dropped the message."""

    def dispatch(self, tasks: Sequence[StepTask]) -> None:
        """Drop ``tasks``."""

    def revoke(self, run_id: str) -> None:
        """Nothing to revoke."""


@pytest.fixture(scope="module")
def sandbox() -> Iterator[ImageSandbox]:
    box = ImageSandbox({"imageproj.py": PROJECT_APP})
    try:
        yield box
    finally:
        box.close()


def test_migrations_beat_and_worker_run_unprivileged_from_a_read_only_directory(
    sandbox: ImageSandbox, pg_url: str
) -> None:
    prefix = "lunora-image-" + uuid.uuid4().hex[:8]
    queue = prefix + "-q"
    broker_url = f"{REDIS_BASE}/{BROKER_DB}"
    env = {
        "LUNORA_APP": "imageproj:app",
        "LUNORA_DATABASE_URL": pg_url,
        "CELERY_BROKER_URL": broker_url,
        "LUNORA_REDIS_URL": f"{REDIS_BASE}/{BROKER_DB}",
        "LUNORA_QUEUE": queue,
        "IMAGE_TEST_PREFIX": prefix,
        "LUNORA_SWEEP_INTERVAL": "0.5",
        "LUNORA_SWEEP_GRACE_MS": "300",
    }
    assert not os.access(sandbox.project, os.W_OK) or os.geteuid() == 0
    broker = redis.Redis.from_url(broker_url)
    try:
        # The migrations job.
        sandbox.run(["lunora", "db", "upgrade"], sandbox.tmp_dir("migrations"), env)

        worker_tmp, beat_tmp = sandbox.tmp_dir("worker"), sandbox.tmp_dir("beat")
        worker_env = sandbox.image_env(worker_tmp)
        ready = Path(worker_env["LUNORA_WORKER_READY_FILE"])
        heartbeat = Path(worker_env["LUNORA_HEARTBEAT_FILE"])
        worker = sandbox.start(
            ["lunora", "worker", "--loglevel=INFO", "--concurrency=1", "-n", f"{prefix}@%h"], worker_tmp, env
        )
        beat = sandbox.start(["lunora", "beat", "--loglevel=INFO"], beat_tmp, env)
        wait_for(ready.exists, 60, "the worker never became ready", sandbox.logs, alive=[worker, beat])
        assert heartbeat.exists(), sandbox.logs()

        greeter = define_agent(name="greeter", instructions="Greet.", model=ScriptedModel([final_turn("-")]))
        app = Lunora([greeter], database_url=pg_url, dispatcher=DroppingDispatcher())
        try:
            handle = app.agents.greeter.run(input="hi", thread_key=prefix)
            wait_for(
                lambda: app.agents.greeter.status(handle.id) == "completed", 90,
                "the dropped run was never recovered by beat's sweep on the worker", sandbox.logs,
                alive=[worker, beat],
            )
            assert app.threads.messages(prefix)[-1].content == "hello from the image"
        finally:
            app.close()

        assert worker.poll() is None and beat.poll() is None, sandbox.logs()
        # Beat's schedule went to the data folder (LUNORA_BEAT_SCHEDULE), and its tick keeps its
        # heartbeat fresh; nothing was written next to the user's code.
        assert list(sandbox.data.glob("celerybeat-schedule*")), sandbox.logs()
        assert Path(sandbox.image_env(beat_tmp)["LUNORA_HEARTBEAT_FILE"]).exists()
        assert sorted(p.name for p in sandbox.project.iterdir()) == ["imageproj.py"]
        # The Lunora code that ran is the wheel's, not this checkout's.
        where = sandbox.run(["python", "-c", "import lunora_jobs; print(lunora_jobs.__file__)"], beat_tmp, {})
        assert where.startswith(str(sandbox.site)), where
    finally:
        sandbox.stop()  # first: beat would keep queueing its ticks on the queue removed below
        broker.delete(queue, f"_kombu.binding.{queue}", f"_kombu.binding_permanent.{queue}")


def test_the_minilm_embedder_loads_unprivileged_from_a_read_only_directory(sandbox: ImageSandbox) -> None:
    out = sandbox.run(["python", "-c", EMBED_CHECK], sandbox.tmp_dir("embed"), {})
    assert out.strip().splitlines()[-1] == "384", out
