"""Render and lint ``helm/lunora-jobs`` offline through Helm's Go SDK (``helm-python-sdk``)."""

from __future__ import annotations

import copy
from typing import Any

import yaml
from deploy_support import CHART, require_module

KUBE_VERSION = "1.30.0"

SCENARIOS: dict[str, dict[str, Any]] = {
    "defaults": {},
    "autoscaling": {"worker": {"autoscaling": {"enabled": True}}},
    "keda-ingress-routes": {
        "routes": {"tool": {"queue": "tools", "priority": 6}, "turn": {"queue": "lunora", "priority": 0}},
        "metrics": {"enabled": True},
        "worker": {
            "keda": {"enabled": True},
            "pools": {"tools": {"queues": ["tools"], "concurrency": 16, "keda": {"maxReplicas": 50}}},
        },
        "channels": {"pdb": {"enabled": True}},
        "ingress": {
            "enabled": True,
            "className": "nginx",
            "hosts": [{"host": "jobs.example.com", "paths": [
                {"path": "/", "pathType": "Prefix", "service": "api"},
                {"path": "/webhooks", "pathType": "Prefix", "service": "ingress"},
                {"path": "/flower", "pathType": "Prefix", "service": "flower"},
            ]}],
            "tls": [{"hosts": ["jobs.example.com"], "secretName": "jobs-tls"}],
        },
    },
    "existing-secret": {"existingSecret": "lunora-secrets", "api": {"enabled": False}},
}


def helm() -> Any:
    """The ``helm_python`` module (skips outside CI when the dev extra is missing)."""
    return require_module("helm_python")


def render(values: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Every object the chart renders for ``values`` (a fresh install of release ``jobs`` in ``prod``)."""
    sdk = helm()
    with sdk.Chart.load(str(CHART)) as chart:
        manifests = chart.render(copy.deepcopy(values or {}), name="jobs", namespace="prod", is_install=True)
    objects: list[dict[str, Any]] = []
    for path, text in sorted(manifests.items()):
        if not path.endswith(".yaml"):
            continue
        objects.extend(doc for doc in yaml.safe_load_all(text) if doc)
    return objects


def of_kind(objects: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    """The objects of ``kind``."""
    return [o for o in objects if o["kind"] == kind]


def named(objects: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    """The one object of ``kind`` called ``name``."""
    found = [o for o in of_kind(objects, kind) if o["metadata"]["name"] == name]
    assert len(found) == 1, (kind, name, [o["metadata"]["name"] for o in of_kind(objects, kind)])
    return found[0]


def pod_specs(objects: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """(object name, pod spec) of every Deployment and Job."""
    return [
        (o["metadata"]["name"], o["spec"]["template"]["spec"])
        for o in objects if o["kind"] in ("Deployment", "Job")
    ]
