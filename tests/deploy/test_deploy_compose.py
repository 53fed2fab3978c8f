"""``deploy/docker-compose.yml``, checked structurally (there is no Docker engine here)."""

from __future__ import annotations

import itertools
import re
from typing import Any

import pytest
import yaml
from deploy_support import DEPLOY

from lunora_jobs.agent import AgentDefinition

COMPOSE = DEPLOY / "docker-compose.yml"
EXAMPLE_ENV = DEPLOY / "example.env"
ROLES = {"worker", "beat", "flower", "api", "ingress"}
AFTER_MIGRATIONS = {"worker", "beat", "api", "ingress"}
SECRET_NAME = re.compile(r"PASSWORD|SECRET|TOKEN|API_KEY|BASIC_AUTH|_AUTH$", re.IGNORECASE)
URL_WITH_PASSWORD = re.compile(r"^[a-z0-9+]+://[^/@\s]*:([^/@\s]+)@")
INTERPOLATION = re.compile(r"\$\{([A-Z0-9_]+)(?:(:?[-?])[^}]*)?\}")


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(COMPOSE.read_text())
    return data


def _env(service: dict[str, Any]) -> dict[str, str]:
    env = service.get("environment") or {}
    if isinstance(env, list):
        env = dict(item.split("=", 1) for item in env)
    return {str(k): str(v) for k, v in env.items()}


def test_every_service_is_there(compose: dict[str, Any]) -> None:
    assert set(compose["services"]) == {"postgres", "redis", "qdrant", "migrations", *ROLES}


def test_roles_share_one_image_built_with_the_users_project(compose: dict[str, Any]) -> None:
    services = compose["services"]
    for name in (*ROLES, "migrations"):
        service = services[name]
        build = service["build"]
        assert build["dockerfile"] == "deploy/Dockerfile", name
        # The user's project comes in as the named build context, never this repository's checkout.
        assert build["additional_contexts"]["project"].startswith("${LUNORA_PROJECT_DIR:?"), name
        assert service["image"] == services["worker"]["image"]
        for volume in service.get("volumes", []):
            source = str(volume).split(":", 1)[0]
            assert not source.startswith((".", "/")), f"{name} mounts a host path: {volume}"


def test_migrations_gate_every_role_that_touches_the_database(compose: dict[str, Any]) -> None:
    services = compose["services"]
    assert services["migrations"]["command"] == ["db", "upgrade"]
    assert services["migrations"]["restart"] == "no"
    assert services["migrations"]["depends_on"]["postgres"]["condition"] == "service_healthy"
    for name in AFTER_MIGRATIONS:
        depends = services[name]["depends_on"]
        assert depends["migrations"]["condition"] == "service_completed_successfully", name
        assert depends["redis"]["condition"] == "service_healthy", name
    assert services["flower"]["depends_on"]["redis"]["condition"] == "service_healthy"


def test_every_long_running_service_has_a_healthcheck(compose: dict[str, Any]) -> None:
    for name, service in compose["services"].items():
        if name == "migrations":
            continue
        check = service.get("healthcheck")
        assert check and check.get("test"), f"{name} has no healthcheck"
    # Workers and beat are checked through their heartbeat file, never through the broker.
    for name in ("worker", "beat"):
        test = " ".join(compose["services"][name]["healthcheck"]["test"])
        assert "LUNORA_HEARTBEAT_FILE" in test and "inspect" not in test, test


def test_roles_run_the_lunora_commands(compose: dict[str, Any]) -> None:
    services = compose["services"]
    for name in ROLES:
        assert services[name]["command"][0] == name
    grace = int(services["worker"]["stop_grace_period"].removesuffix("s"))
    assert grace > AgentDefinition.step_timeout_s, "a deploy must let a running step finish"


def test_flower_asks_for_a_password_and_listens_on_loopback(compose: dict[str, Any]) -> None:
    flower = compose["services"]["flower"]
    assert _env(flower)["FLOWER_BASIC_AUTH"].startswith("${FLOWER_BASIC_AUTH:?")
    for name, service in compose["services"].items():
        for port in service.get("ports", []):
            assert str(port).startswith("127.0.0.1:"), f"{name} publishes {port} on every interface"


def test_no_secret_is_written_in_the_file(compose: dict[str, Any]) -> None:
    for name, service in compose["services"].items():
        for key, value in _env(service).items():
            if SECRET_NAME.search(key):
                assert value.startswith("${"), f"{name}: {key} is set inline"
            match = URL_WITH_PASSWORD.match(value)
            if match:
                assert match.group(1).startswith("${"), f"{name}: {key} holds a password inline"
        command = [str(arg) for arg in service.get("command", [])]
        for option, value in itertools.pairwise(command):
            if "pass" in option.lower():  # e.g. redis-server --requirepass <password>
                assert value.startswith("${"), f"{name}: {option} is given inline"
        for env_file in service.get("env_file", []):
            path = env_file["path"] if isinstance(env_file, dict) else env_file
            assert not (DEPLOY / path).exists() or path.endswith("example.env"), f"{path} is committed"


def test_every_variable_the_file_needs_is_in_the_example_env() -> None:
    text = COMPOSE.read_text()
    needed = {m.group(1) for m in INTERPOLATION.finditer(text) if m.group(2) in (":?", "?")}
    example = {
        line.split("=", 1)[0] for line in EXAMPLE_ENV.read_text().splitlines()
        if line.strip() and not line.startswith("#")
    }
    assert needed <= example, needed - example
    optional = {m.group(1) for m in INTERPOLATION.finditer(text)} - needed - {"LUNORA_IMAGE"}
    assert optional <= example, optional - example
    # The example holds no real secret: every password-like value is empty.
    for line in EXAMPLE_ENV.read_text().splitlines():
        key, _, value = line.partition("=")
        if SECRET_NAME.search(key) and not line.startswith("#"):
            assert value == "", line
