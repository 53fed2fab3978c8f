"""The Helm chart: lint, render (defaults, autoscaling, KEDA + ingress + routes), schema-validate every
object, and check what the chart promises (probes, rollout, security, hooks, documentation)."""

from __future__ import annotations

import json
import re
import tarfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from deploy_support import CHART, ROOT, require_module
from helm_support import KUBE_VERSION, SCENARIOS, helm, named, of_kind, pod_specs, render

from lunora_jobs.agent import AgentDefinition

KEDA_SCHEMA = Path(__file__).parent / "schemas" / "keda-scaledobject-v1alpha1.json"


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_chart_lints_clean(scenario: str) -> None:
    report = helm().lint(str(CHART), SCENARIOS[scenario], strict=True, kube_version=f"v{KUBE_VERSION}")
    problems = [m for m in report["messages"] if m["severity"] >= 2]
    assert not problems and not report["errors"], report


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_every_rendered_object_validates_against_its_schema(scenario: str) -> None:
    kubernetes_validate = require_module("kubernetes_validate")
    jsonschema = require_module("jsonschema")
    keda = jsonschema.Draft202012Validator(json.loads(KEDA_SCHEMA.read_text()))
    objects = render(SCENARIOS[scenario])
    assert objects
    for obj in objects:
        where = f"{obj['kind']}/{obj['metadata']['name']}"
        if obj["apiVersion"].startswith("keda.sh/"):
            errors = [e.message for e in keda.iter_errors(obj)]
            assert not errors, (where, errors)
        else:
            try:
                kubernetes_validate.validate(obj, KUBE_VERSION, strict=True)
            except kubernetes_validate.ValidationError as exc:
                pytest.fail(f"{where}: {exc.message} at {list(exc.path)}")


def test_the_scenarios_render_what_they_enable() -> None:
    kinds = {name: {o["kind"] for o in render(values)} for name, values in SCENARIOS.items()}
    base = {"ConfigMap", "Secret", "Deployment", "Service", "PodDisruptionBudget", "Job"}
    assert kinds["defaults"] == base
    assert kinds["autoscaling"] == base | {"HorizontalPodAutoscaler"}
    assert kinds["keda-ingress-routes"] == base | {"ScaledObject", "Ingress"}
    objects = render(SCENARIOS["keda-ingress-routes"])
    deployments = {o["metadata"]["name"] for o in of_kind(objects, "Deployment")}
    assert deployments == {f"jobs-lunora-jobs-{c}" for c in
                           ("worker-default", "worker-tools", "beat", "flower", "api", "ingress")}


def test_a_pool_runs_on_prefork_by_default_or_on_solo_without_a_concurrency() -> None:
    objects = render({"worker": {"pools": {"default": {}, "fast": {"queues": ["fast"], "pool": "solo"}}}})

    def args(component: str) -> list[str]:
        deployment = named(objects, "Deployment", f"jobs-lunora-jobs-{component}")
        return list(deployment["spec"]["template"]["spec"]["containers"][0]["args"])

    assert "--pool=prefork" in args("worker-default") and "--concurrency=4" in args("worker-default")
    assert "--pool=solo" in args("worker-fast")
    assert not [a for a in args("worker-fast") if a.startswith("--concurrency")]


def test_keda_watches_every_redis_list_a_pool_is_fed_through() -> None:
    objects = render(SCENARIOS["keda-ingress-routes"])
    tools = named(objects, "ScaledObject", "jobs-lunora-jobs-worker-tools")
    lists = [t["metadata"]["listName"] for t in tools["spec"]["triggers"]]
    # kombu's Redis transport keeps priority 6 in "<queue>\x06\x166".
    assert lists == ["tools", "tools\x06\x166"]
    assert {t["metadata"]["address"] for t in tools["spec"]["triggers"]} == {"redis:6379"}
    assert tools["spec"]["maxReplicaCount"] == 50
    assert "replicas" not in named(objects, "Deployment", "jobs-lunora-jobs-worker-tools")["spec"]


def test_worker_and_beat_probes_read_the_heartbeat_file_never_the_broker() -> None:
    objects = render({})
    for name, spec in pod_specs(objects):
        for container in spec["containers"]:
            probes = json.dumps({k: v for k, v in container.items() if k.endswith("Probe")})
            assert "inspect" not in probes and "celery" not in probes, (name, probes)
    for component in ("worker-default", "beat"):
        container = named(objects, "Deployment", f"jobs-lunora-jobs-{component}")["spec"]["template"]["spec"][
            "containers"][0]
        for probe in ("startupProbe", "livenessProbe"):
            command = container[probe]["exec"]["command"]
            assert command[:2] == ["sh", "-c"] and "$LUNORA_HEARTBEAT_FILE" in command[2], command
            assert command[2].endswith("-lt 60")
    worker = named(objects, "Deployment", "jobs-lunora-jobs-worker-default")["spec"]["template"]["spec"]
    assert worker["containers"][0]["readinessProbe"]["exec"]["command"] == ["test", "-f", "/tmp/lunora-ready"]
    config = named(objects, "ConfigMap", "jobs-lunora-jobs")["data"]
    assert config["LUNORA_HEARTBEAT_FILE"] == "/tmp/lunora-heartbeat"
    assert config["LUNORA_WORKER_READY_FILE"] == "/tmp/lunora-ready"


def test_rollouts_keep_one_beat_and_let_running_steps_finish() -> None:
    objects = render({})
    beat = named(objects, "Deployment", "jobs-lunora-jobs-beat")["spec"]
    assert beat["replicas"] == 1 and beat["strategy"] == {"type": "Recreate"}
    worker = named(objects, "Deployment", "jobs-lunora-jobs-worker-default")["spec"]
    assert worker["template"]["spec"]["terminationGracePeriodSeconds"] > AgentDefinition.step_timeout_s
    assert worker["strategy"]["rollingUpdate"]["maxUnavailable"] == 0
    assert worker["template"]["spec"]["containers"][0]["args"][:1] == ["worker"]
    pdb = named(objects, "PodDisruptionBudget", "jobs-lunora-jobs-worker-default")["spec"]
    assert pdb["maxUnavailable"] == 1


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_every_pod_is_non_root_read_only_and_requests_resources(scenario: str) -> None:
    for name, spec in pod_specs(render(SCENARIOS[scenario])):
        assert spec["securityContext"]["runAsNonRoot"] is True, name
        assert spec["securityContext"]["runAsUser"] >= 1000, name
        assert spec["automountServiceAccountToken"] is False, name
        for container in spec["containers"]:
            security = container["securityContext"]
            assert security["allowPrivilegeEscalation"] is False, name
            assert security["readOnlyRootFilesystem"] is True, name
            assert security["capabilities"]["drop"] == ["ALL"], name
            assert container["resources"]["requests"]["cpu"], name
            assert container["resources"]["requests"]["memory"], name
            mounts = {m["mountPath"] for m in container["volumeMounts"]}
            assert {"/tmp", "/data"} <= mounts, name


def test_migrations_run_before_install_and_upgrade_with_their_own_config() -> None:
    objects = render({"secretValues": {"LUNORA_DATABASE_URL": "postgresql://u:p@db/lunora"}})
    job = named(objects, "Job", "jobs-lunora-jobs-migrations")
    hooks = job["metadata"]["annotations"]
    assert hooks["helm.sh/hook"] == "pre-install,pre-upgrade"
    assert job["spec"]["template"]["spec"]["containers"][0]["args"] == ["db", "upgrade"]
    # The release's ConfigMap and Secret do not exist yet when a pre-install hook runs.
    for kind in ("ConfigMap", "Secret"):
        copy_ = named(objects, kind, "jobs-lunora-jobs-migrations")
        assert copy_["metadata"]["annotations"]["helm.sh/hook"] == "pre-install,pre-upgrade"
        weight = int(copy_["metadata"]["annotations"]["helm.sh/hook-weight"])
        assert weight < int(hooks["helm.sh/hook-weight"])
    assert named(objects, "Secret", "jobs-lunora-jobs-migrations")["stringData"] == {
        "LUNORA_DATABASE_URL": "postgresql://u:p@db/lunora"
    }
    env_from = job["spec"]["template"]["spec"]["containers"][0]["envFrom"]
    assert [next(iter(e.values()))["name"] for e in env_from] == ["jobs-lunora-jobs-migrations"] * 2


def test_secrets_leave_out_empty_values_and_flower_always_has_a_password() -> None:
    objects = render({"secretValues": {"OPENAI_API_KEY": "sk-test"}})
    data = named(objects, "Secret", "jobs-lunora-jobs")["stringData"]
    assert set(data) == {"OPENAI_API_KEY", "FLOWER_BASIC_AUTH"}  # no empty OPENAI_BASE_URL, DB URL
    user, _, password = data["FLOWER_BASIC_AUTH"].partition(":")
    assert user == "admin" and len(password) >= 24
    given = render({"secretValues": {"FLOWER_BASIC_AUTH": "ops:s3cret"}})
    assert named(given, "Secret", "jobs-lunora-jobs")["stringData"]["FLOWER_BASIC_AUTH"] == "ops:s3cret"
    existing = render(SCENARIOS["existing-secret"])
    assert not [s for s in of_kind(existing, "Secret")]
    for _, spec in pod_specs(existing):
        refs = [e["secretRef"]["name"] for e in spec["containers"][0]["envFrom"] if "secretRef" in e]
        assert refs == ["lunora-secrets"]


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"routes": {"tool": {"queue": "tools"}}}, "no worker pool consumes"),
        ({"routes": {"tools": {"queue": "lunora"}}}, "step kind is turn, tool, memory or resume"),
        ({"worker": {"pools": {"default": None, "x": {"queues": ["x"]}}}}, "consumes defaultQueue"),
        ({"worker": {"autoscaling": {"enabled": True}, "keda": {"enabled": True}}}, "not both"),
        ({"worker": {"pool": "threads"}}, "pool must be prefork or solo"),
        ({"ingress": {"enabled": True, "hosts": [{"host": "h", "paths": [
            {"path": "/", "pathType": "Prefix", "service": "db"}]}]}}, "service must be api, ingress or"),
    ],
)
def test_render_refuses_values_that_would_not_work(values: dict[str, Any], message: str) -> None:
    sdk = helm()
    with pytest.raises(sdk.HelmError, match=message):
        render(values)


def _paths(values: dict[str, Any], prefix: str = "") -> dict[str, bool]:
    """Every key path of ``values`` -> whether it is a leaf (a value, a list, or an empty map)."""
    paths: dict[str, bool] = {}
    for key, value in values.items():
        path = f"{prefix}{key}"
        paths[path] = not (isinstance(value, dict) and value)
        if not paths[path]:
            paths.update(_paths(value, path + "."))
    return paths


def test_every_value_is_documented_in_the_chart_readme() -> None:
    paths = _paths(yaml.safe_load((CHART / "values.yaml").read_text()))
    documented = set(re.findall(r"^\| `([^`]+)` \|", (CHART / "README.md").read_text(), re.MULTILINE))
    missing = [path for path, leaf in paths.items() if leaf and path not in documented]
    assert not missing, f"values missing from helm/lunora-jobs/README.md: {missing}"
    unknown = sorted(documented - set(paths))
    assert not unknown, f"README documents values that do not exist: {unknown}"


def test_the_packaged_chart_holds_only_the_chart(tmp_path: Path) -> None:
    archive = helm().package(str(CHART), destination=str(tmp_path))
    with tarfile.open(archive) as tar:
        names = sorted(tar.getnames())
    assert all(n.startswith("lunora-jobs/") for n in names), names
    inside = {n.removeprefix("lunora-jobs/") for n in names}
    assert {"Chart.yaml", "values.yaml", "README.md", "templates/worker.yaml"} <= inside
    assert not [n for n in inside if re.search(r"\.(tar|tgz|bz2|gz|zip)", n)], inside
    assert not list(CHART.rglob("*.tar*")), "an archive sits in the chart folder"
    assert ROOT in CHART.parents
