"""Every code block of README.md runs as written (extracted from the file, never copied here).

Blocks run in README order, each in a fresh process from the repository root: ``python`` blocks with
this interpreter (``-c``), ``bash`` blocks with ``bash -euo pipefail`` with this virtualenv's scripts
(``lunora``) first on PATH. They share one private ``LUNORA_DATA_DIR`` (a later block may read what an
earlier one wrote, as a reader pasting them in order would) and run without any ``LUNORA_*``,
``CELERY_*`` or ``OPENAI_*`` setting, as on a fresh machine. The comment before a block (see
``readme_blocks.py``) may name a fixture:

- ``openai``: a local server speaking OpenAI's chat-completions wire format
  (``tests/integration/models/openai_chat_server.py``) as ``OPENAI_BASE_URL``; it answers the first
  request with a ``charge_card`` call (``amount`` 20, the agent snippet's tool), every later one with a
  final text, and the block must have called it.

or skip a block with its reason; skips are few and each is listed by ``test_skips_are_few_and_explained``.
A block in any other language, or naming an unknown fixture, fails the test: every block is either run
or explicitly excused.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from readme_blocks import Block, readme_blocks

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "integration" / "models"))
from openai_chat_server import ChatServer, chat_server, reply

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[3]
README = ROOT / "README.md"
BLOCKS = readme_blocks(README)
RUNNERS = {"python": [sys.executable, "-c"], "bash": ["bash", "-euo", "pipefail", "-c"]}
CLEARED = ("LUNORA_", "CELERY_", "OPENAI_")
MAX_SKIPS = 4


@contextmanager
def _openai(env: dict[str, str]) -> Iterator[ChatServer]:
    with chat_server() as server:
        # The server pops one reply per request: the snippet's tool call, then final texts.
        server.replies += [
            reply(tool_calls=[("call_readme_1", "charge_card", json.dumps({"amount": 20}))],
                  finish_reason="tool_calls"),
            *[reply(content="Done: refunded 20.") for _ in range(8)],
        ]
        env.update(OPENAI_API_KEY="readme-test", OPENAI_BASE_URL=server.base_url)
        yield server


@contextmanager
def _no_fixture(env: dict[str, str]) -> Iterator[None]:
    yield None


FIXTURES = {"openai": _openai}


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The ``LUNORA_DATA_DIR`` every block of one run shares."""
    return tmp_path_factory.mktemp("readme-data")


def _env(data_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(CLEARED)}
    env["LUNORA_DATA_DIR"] = str(data_dir)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


@pytest.mark.parametrize("block", BLOCKS, ids=[b.id for b in BLOCKS])
def test_readme_block_runs_as_written(block: Block, data_dir: Path) -> None:
    if block.skip is not None:
        pytest.skip(f"README.md:{block.line} not run: {block.skip}")
    assert block.lang in RUNNERS, (
        f"README.md:{block.line}: a {block.lang or 'plain'} block can't be run; make it python or bash, "
        "or excuse it with <!-- readme-test: skip: WHY -->"
    )
    assert block.fixture is None or block.fixture in FIXTURES, (
        f"README.md:{block.line}: unknown fixture {block.fixture!r} (known: {sorted(FIXTURES)})"
    )
    env = _env(data_dir)
    with FIXTURES[block.fixture](env) if block.fixture else _no_fixture(env) as server:
        done = subprocess.run([*RUNNERS[block.lang], block.code], cwd=ROOT, env=env, capture_output=True,
                              text=True, timeout=600, check=False)
    assert done.returncode == 0, (
        f"README.md:{block.line} ({block.lang}) failed with {done.returncode}:\n{block.code}\n"
        f"--- stdout ---\n{done.stdout[-3000:]}\n--- stderr ---\n{done.stderr[-5000:]}"
    )
    if server is not None:
        assert server.requests, f"README.md:{block.line} never called the model it was given"


def test_skips_are_few_and_explained() -> None:
    skipped = [b for b in BLOCKS if b.skip is not None]
    assert len(skipped) <= MAX_SKIPS, [(b.line, b.skip) for b in skipped]
    assert all(len(b.skip or "") > 15 for b in skipped), [(b.line, b.skip) for b in skipped]
    assert len(BLOCKS) - len(skipped) >= 4  # the example command, the agent, harness and RAG snippets
