"""deploy/k8s: every manifest valid against the Kubernetes OpenAPI schemas (bundled by
kubernetes-validate, offline), plus the wiring the schemas cannot see."""
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from botgrpo.reward_server.settings import ServerSettings, load_server_settings

K8S = Path(__file__).resolve().parents[1] / "deploy" / "k8s"
KUBERNETES_VERSION = "1.30"  # oldest release the manifests target
NAMESPACE = "botgrpo"
WORKLOADS = {"Deployment", "StatefulSet", "Job"}


def load_all() -> list[dict]:
    docs = []
    for path in sorted(K8S.glob("*.yaml")):
        docs += [doc for doc in yaml.safe_load_all(path.read_text()) if doc and doc["kind"] != "Kustomization"]
    return docs


DOCS = load_all()


def find(kind: str, name: str) -> dict:
    [doc] = [d for d in DOCS if d["kind"] == kind and d["metadata"]["name"] == name]
    return doc


def pod_spec(doc: dict) -> dict:
    return doc["spec"]["template"]["spec"]


def containers(doc: dict) -> list[dict]:
    return pod_spec(doc)["containers"]


def container_port(container: dict, port) -> int:
    """A probe's or Service's port, by number or by name, as the container's port number."""
    for p in container.get("ports", []):
        if port in (p["containerPort"], p.get("name")):
            return p["containerPort"]
    raise AssertionError(f"container {container['name']} has no port {port!r}")


@pytest.mark.parametrize("doc", DOCS, ids=lambda d: f"{d['kind']}/{d['metadata']['name']}")
def test_matches_kubernetes_schema(doc):
    # strict: unknown fields (typos) are errors, as with kubectl's server-side field validation.
    kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)


def test_schema_rejects_a_misspelt_field():
    broken = yaml.safe_load(yaml.safe_dump(find("Deployment", "botgrpo-server")))
    containers(broken)[0]["readinesProbe"] = containers(broken)[0].pop("readinessProbe")
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, KUBERNETES_VERSION, strict=True)


def test_kustomization_lists_every_manifest_but_the_trainer():
    kustomization = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    listed = set(kustomization["resources"])
    assert all((K8S / name).is_file() for name in listed)
    # trainer.yaml is applied by hand once its volume is filled (docs/deployment.md).
    assert listed | {"trainer.yaml"} == {p.name for p in K8S.glob("*.yaml")} - {"kustomization.yaml"}


def test_everything_lives_in_the_namespace():
    assert find("Namespace", NAMESPACE)
    for doc in DOCS:
        if doc["kind"] != "Namespace":
            assert doc["metadata"]["namespace"] == NAMESPACE, doc["metadata"]["name"]


@pytest.mark.parametrize("doc", [d for d in DOCS if d["kind"] in WORKLOADS], ids=lambda d: d["metadata"]["name"])
def test_workloads_are_bounded_and_unprivileged(doc):
    spec = pod_spec(doc)
    for c in containers(doc):
        for bound in ("requests", "limits"):
            assert {"cpu", "memory"} <= set(c["resources"][bound]), f"{c['name']}: {bound}"
        assert c.get("securityContext", {}).get("runAsNonRoot", spec["securityContext"]["runAsNonRoot"]) is True
        assert c["securityContext"]["allowPrivilegeEscalation"] is False
        assert c["securityContext"]["capabilities"]["drop"] == ["ALL"]
        assert ":" in c["image"] or c["image"] == "botgrpo-server", "pinned, or tagged by kustomization"


@pytest.mark.parametrize("doc", [d for d in DOCS if d["kind"] in {"Deployment", "StatefulSet"}],
                         ids=lambda d: d["metadata"]["name"])
def test_selectors_match_pod_labels(doc):
    selector = doc["spec"]["selector"]["matchLabels"]
    labels = doc["spec"]["template"]["metadata"]["labels"]
    assert selector.items() <= labels.items()


def test_services_select_pods_and_ports():
    for service in (d for d in DOCS if d["kind"] == "Service"):
        selector = service["spec"]["selector"]
        backends = [d for d in DOCS if d["kind"] in WORKLOADS
                    and selector.items() <= d["spec"]["template"]["metadata"]["labels"].items()]
        assert len(backends) == 1, f"Service {service['metadata']['name']} selects {len(backends)} workloads"
        [container] = containers(backends[0])
        for port in service["spec"]["ports"]:
            container_port(container, port["targetPort"])


def test_server_probes_health_endpoints_on_its_port():
    [server] = containers(find("Deployment", "botgrpo-server"))
    assert server["args"][-1] == str(container_port(server, "http"))
    probes = {kind: server[kind]["httpGet"] for kind in ("readinessProbe", "livenessProbe")}
    assert probes["readinessProbe"]["path"] == "/readyz"
    assert probes["livenessProbe"]["path"] == "/healthz"
    for probe in probes.values():
        assert container_port(server, probe["port"]) == 8000


def test_hpa_scales_the_workers_on_cpu():
    hpa = find("HorizontalPodAutoscaler", "botgrpo-worker")
    target = hpa["spec"]["scaleTargetRef"]
    worker = find(target["kind"], target["name"])
    assert (target["apiVersion"], worker["kind"]) == ("apps/v1", "Deployment")
    assert containers(worker)[0]["args"] == ["botgrpo", "worker"]
    assert "replicas" not in worker["spec"], "the HPA owns the replica count"
    [metric] = hpa["spec"]["metrics"]
    assert metric["resource"]["name"] == "cpu" and metric["resource"]["target"]["type"] == "Utilization"
    assert 1 <= hpa["spec"]["minReplicas"] <= hpa["spec"]["maxReplicas"]


def test_secret_references_resolve():
    secrets = {d["metadata"]["name"]: d for d in DOCS if d["kind"] == "Secret"}
    refs = [env["valueFrom"]["secretKeyRef"] for d in DOCS if d["kind"] in WORKLOADS
            for c in containers(d) for env in c.get("env", []) if "secretKeyRef" in env.get("valueFrom", {})]
    assert refs, "the API key must come from the Secret"
    for ref in refs:
        assert ref["key"] in secrets[ref["name"]]["stringData"], ref
    [server] = containers(find("Deployment", "botgrpo-server"))
    assert any(e["name"] == "BOTGRPO_API_KEY" and "secretKeyRef" in e.get("valueFrom", {}) for e in server["env"])


def test_redis_is_persistent():
    redis = find("StatefulSet", "redis")
    [container] = containers(redis)
    assert container["args"][container["args"].index("--appendonly") + 1] == "yes"
    [claim] = redis["spec"]["volumeClaimTemplates"]
    assert {"name": claim["metadata"]["name"], "mountPath": "/data"} in container["volumeMounts"]


def test_trainer_job_requests_a_gpu():
    [trainer] = containers(find("Job", "botgrpo-train"))
    assert int(trainer["resources"]["limits"]["nvidia.com/gpu"]) >= 1
    assert "http://botgrpo-server:8000" in trainer["args"]


SETTINGS_ENV = {f"BOTGRPO_{name.upper()}" for name in ServerSettings.model_fields} | {"REDIS_URL"}


@pytest.mark.parametrize("name", ["botgrpo-server", "botgrpo-worker"])
def test_server_environment_is_real_settings(name):
    [container] = containers(find("Deployment", name))
    env = {e["name"]: e.get("value", "from-a-secret") for e in container["env"]}
    assert not set(env) - SETTINGS_ENV, f"{name}: {sorted(set(env) - SETTINGS_ENV)} are not ServerSettings fields"
    assert load_server_settings(environ=env).redis_url == "redis://redis:6379/0"  # values parse too
