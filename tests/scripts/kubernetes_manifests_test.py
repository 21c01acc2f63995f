#!/usr/bin/env python3
"""Checks of deploy/kubernetes and deploy/docker/Dockerfile (docs/cluster.md). No cluster is
needed, and none is used: the manifests are checked client-side.

    kubernetes_manifests_test.py structure   kinds, apiVersions, and what mqx needs of the pods
                                             (PyYAML)
    kubernetes_manifests_test.py config      the ConfigMap's mqx.toml through mqx's own parser
                                             (the Python module mqx, PYTHONPATH=build/python)
    kubernetes_manifests_test.py kustomize   `kubectl kustomize deploy/kubernetes` (client-side;
                                             `kubectl create --dry-run=client` needs a server)

Exit 77 (ctest's skip) when the tool a mode needs is missing, saying which. Every check is
also shown to fail on a manifest broken on purpose.
"""

from __future__ import annotations

import copy
import fnmatch
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path
from typing import Any, Callable, Optional

ROOT = Path(__file__).resolve().parents[2]
MANIFESTS = ROOT / "deploy" / "kubernetes"
DOCKERFILE = ROOT / "deploy" / "docker" / "Dockerfile"
BUILD_DIR = Path(os.environ.get("MQXTEST_BUILD_DIR", ROOT / "build"))
SKIP = 77

try:
    import yaml
except ImportError:
    yaml = None

# The kinds the deployment uses and the apiVersion of each (stable APIs only).
API_VERSIONS = {
    "Namespace": "v1", "ConfigMap": "v1", "ServiceAccount": "v1", "DaemonSet": "apps/v1", "Job": "batch/v1",
    "ClusterRole": "rbac.authorization.k8s.io/v1", "ClusterRoleBinding": "rbac.authorization.k8s.io/v1",
}
CLUSTER_SCOPED = {"Namespace", "ClusterRole", "ClusterRoleBinding"}
NAMESPACE = "mqx"

Document = dict[str, Any]


def load_advertiser():
    path = ROOT / "deploy" / "advertiser" / "mqx_capacity_advertiser.py"
    spec = importlib.util.spec_from_file_location("mqx_capacity_advertiser", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module


def manifest_files() -> list[Path]:
    """Every manifest: the kustomization's resources and the examples."""
    files = sorted(MANIFESTS.glob("*.yaml")) + sorted((MANIFESTS / "examples").glob("*.yaml"))
    return [f for f in files if f.name != "kustomization.yaml"]


def load_documents() -> list[Document]:
    documents = []
    for path in manifest_files():
        for document in yaml.safe_load_all(path.read_text()):
            if document is not None:
                document["__file__"] = str(path.relative_to(MANIFESTS))
                documents.append(document)
    return documents


def one(documents: list[Document], kind: str) -> Document:
    found = [d for d in documents if d.get("kind") == kind]
    if len(found) != 1:
        raise AssertionError(f"expected one {kind}, found {len(found)}")
    return found[0]


def pod_of(workload: Document) -> Document:
    return workload["spec"]["template"]["spec"]


def container(pod: Document, name: str) -> Document:
    for candidate in pod.get("containers", []):
        if candidate.get("name") == name:
            return candidate
    raise AssertionError(f"no container {name!r}")


def env_of(workload_container: Document) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in workload_container.get("env", [])}


def mounted_host_path(pod: Document, workload_container: Document, path: str) -> bool:
    """Whether the container mounts the host's `path` at `path`."""
    host_paths = {v["name"]: v["hostPath"].get("path") for v in pod.get("volumes", []) if "hostPath" in v}
    return any(m.get("mountPath") == path and host_paths.get(m.get("name")) == path and not m.get("readOnly")
               for m in workload_container.get("volumeMounts", []))


def config_file_of(pod: Document, workload_container: Document) -> tuple[Optional[str], Optional[str]]:
    """(ConfigMap name, key) that MQX_CONFIG names through the container's mounts."""
    path = env_of(workload_container).get("MQX_CONFIG")
    maps = {v["name"]: v["configMap"]["name"] for v in pod.get("volumes", []) if "configMap" in v}
    for mount in workload_container.get("volumeMounts", []):
        directory = mount["mountPath"].rstrip("/") + "/"
        if isinstance(path, str) and path.startswith(directory) and mount["name"] in maps:
            return maps[mount["name"]], path[len(directory):]
    return None, None


def problems_of(check: Callable[[list[Document]], None], documents: list[Document]) -> Optional[str]:
    try:
        check(documents)
    except (AssertionError, AttributeError, KeyError, TypeError, IndexError, ValueError) as error:
        return f"{type(error).__name__}: {error}"
    return None


# ---- structure -------------------------------------------------------------------------------

def check_documents(documents: list[Document]) -> None:
    names = set()
    for document in documents:
        where = document.get("__file__")
        kind = document.get("kind")
        assert kind in API_VERSIONS, f"{where}: kind {kind!r} is not one the deployment uses"
        assert document.get("apiVersion") == API_VERSIONS[kind], \
            f"{where}: {kind} has apiVersion {document.get('apiVersion')!r}, not {API_VERSIONS[kind]}"
        metadata = document.get("metadata") or {}
        assert metadata.get("name") or metadata.get("generateName"), f"{where}: {kind} has no name"
        if kind in CLUSTER_SCOPED:
            assert "namespace" not in metadata, f"{where}: {kind} is cluster-scoped but names a namespace"
        else:
            assert metadata.get("namespace") == NAMESPACE, f"{where}: {kind} is not in namespace {NAMESPACE}"
        key = (kind, metadata.get("name") or metadata.get("generateName"))
        assert key not in names, f"{where}: {kind} {key[1]} is defined twice"
        names.add(key)
    assert ("Namespace", NAMESPACE) in names, f"no Namespace {NAMESPACE}"


def check_daemonset(documents: list[Document]) -> None:
    daemonset = one(documents, "DaemonSet")
    template = daemonset["spec"]["template"]
    selector = daemonset["spec"]["selector"]["matchLabels"]
    assert selector.items() <= template["metadata"]["labels"].items(), "the selector does not match the pods"
    pod = pod_of(daemonset)
    assert pod.get("hostIPC") is True, "mqxd's pod must share the host's IPC namespace (message queues)"
    assert pod.get("hostPID") is True, "mqxd's pod must share the host's PID namespace (clients by pid)"
    assert pod.get("nodeSelector"), "mqxd must run on GPU nodes only (nodeSelector)"
    security = pod.get("securityContext", {})
    assert isinstance(security.get("runAsUser"), int) and security["runAsUser"] > 0, "no fixed non-root runAsUser"
    assert security.get("runAsNonRoot") is True, "runAsNonRoot is not set"
    mqxd = container(pod, "mqxd")
    assert mqxd["command"][0] == "mqxd", f"the mqxd container runs {mqxd['command']}"
    assert mounted_host_path(pod, mqxd, "/dev/shm"), "mqxd does not mount the host's /dev/shm (writable)"
    assert config_file_of(pod, mqxd) == ("mqx-config", "mqx.toml"), "MQX_CONFIG is not the ConfigMap's mqx.toml"
    assert "nvidia.com/gpu" in mqxd.get("resources", {}).get("limits", {}), "mqxd has no share of the GPU"
    for probe in ("livenessProbe", "readinessProbe"):
        assert probe_url(mqxd[probe]), f"mqxd's {probe} does not read its metrics"
    advertiser = container(pod, "capacity-advertiser")
    assert advertiser["command"][0] == "mqx-capacity-advertiser", f"the advertiser runs {advertiser['command']}"
    node_name = env_of(advertiser).get("NODE_NAME")
    assert isinstance(node_name, dict) and node_name.get("fieldRef", {}).get("fieldPath") == "spec.nodeName", \
        "NODE_NAME is not the pod's node"
    accounts = {d["metadata"]["name"] for d in documents if d["kind"] == "ServiceAccount"}
    assert pod.get("serviceAccountName") in accounts, "the pod's service account is not defined"
    assert one(documents, "ConfigMap").get("data", {}).get("mqx.toml"), "the ConfigMap has no mqx.toml"


def check_rbac(documents: list[Document]) -> None:
    account = pod_of(one(documents, "DaemonSet"))["serviceAccountName"]
    role = one(documents, "ClusterRole")
    assert any("" in rule.get("apiGroups", []) and "nodes" in rule.get("resources", [])
               and "patch" in rule.get("verbs", []) for rule in role["rules"]), "the role cannot patch nodes"
    binding = one(documents, "ClusterRoleBinding")
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                  "name": role["metadata"]["name"]}, "the binding names another role"
    assert {"kind": "ServiceAccount", "name": account, "namespace": NAMESPACE} in binding["subjects"], \
        "the binding does not name the advertiser's service account"


def check_job(documents: list[Document]) -> None:
    job = one(documents, "Job")
    pod, daemon_pod = pod_of(job), pod_of(one(documents, "DaemonSet"))
    query = container(pod, "query")
    command = query["command"]
    assert command[0] == "mqx-run", f"the query's entrypoint is {command[0]!r}, not mqx-run"
    assert "--" in command and len(command) > command.index("--") + 1, "mqx-run -- QUERY: no query after --"
    assert pod.get("restartPolicy") == "Never", "a Job's query pod restarts (restartPolicy)"
    assert pod.get("hostIPC") is True and pod.get("hostPID") is True, "the query does not share IPC and PID"
    for key in ("runAsUser", "runAsGroup"):
        assert pod["securityContext"].get(key) == daemon_pod["securityContext"].get(key), \
            f"the query's {key} is not mqxd's: the node's segment is per user"
    assert mounted_host_path(pod, query, "/dev/shm"), "the query does not mount the host's /dev/shm"
    mqxd = container(daemon_pod, "mqxd")
    assert config_file_of(pod, query) == config_file_of(daemon_pod, mqxd), "the query reads another mqx.toml"
    assert "nvidia.com/gpu" in query.get("resources", {}).get("limits", {}), "the query has no share of the GPU"
    keys = load_advertiser().label_keys(advertiser_prefix(daemon_pod))
    affinity = pod["affinity"]["nodeAffinity"]
    required = [e for term in affinity["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
                for e in term["matchExpressions"]]
    preferred = [e for p in affinity.get("preferredDuringSchedulingIgnoredDuringExecution", [])
                 for e in p["preference"]["matchExpressions"]]
    for expression in required + preferred:
        assert expression["key"] in keys.values(), f"the Job selects on {expression['key']}, which nobody sets"
        if expression["operator"] in ("Gt", "Lt"):
            assert len(expression["values"]) == 1 and expression["values"][0].isdigit(), "Gt/Lt take one integer"
    assert {"key": keys["ready"], "operator": "In", "values": ["true"]} in required, "the node's mqxd may be down"
    assert any(e["key"] == keys["free-mib"] and e["operator"] == "Gt" for e in required), "no room is required"


def check_hardening(documents: list[Document]) -> None:
    """What docs/cluster.md promises of the pods that share the host's namespaces: no root, no
    capability, no escalation; mqxd and the advertiser on read-only root filesystems."""
    for document in documents:
        if document["kind"] not in ("DaemonSet", "Job"):
            continue
        pod = pod_of(document)
        for c in pod.get("initContainers", []) + pod["containers"]:
            security = c.get("securityContext", {})
            where = f"{document['kind']} container {c['name']}"
            assert not security.get("privileged"), f"{where} is privileged"
            assert security.get("allowPrivilegeEscalation") is False, f"{where} may escalate privileges"
            assert "ALL" in security.get("capabilities", {}).get("drop", []), f"{where} keeps capabilities"
            if document["kind"] == "DaemonSet":
                assert security.get("readOnlyRootFilesystem") is True, f"{where} may write its root filesystem"


def advertiser_prefix(daemon_pod: Document) -> str:
    command = container(daemon_pod, "capacity-advertiser")["command"]
    return command[command.index("--prefix") + 1] if "--prefix" in command else "mqx"


def probe_url(probe: Document) -> Optional[str]:
    command = probe.get("exec", {}).get("command", [])
    if command[:2] == ["mqx-capacity-advertiser", "--check"] and "--metrics-url" in command:
        return command[command.index("--metrics-url") + 1]
    return None


def check_kustomization(documents: list[Document]) -> None:
    kustomization = yaml.safe_load((MANIFESTS / "kustomization.yaml").read_text())
    listed = set(kustomization["resources"])
    files = {str(f.relative_to(MANIFESTS)) for f in manifest_files() if f.parent == MANIFESTS}
    assert listed == files, f"kustomization.yaml lists {sorted(listed)}, the folder has {sorted(files)}"
    images = {i["name"] for i in kustomization.get("images", [])}
    for document in documents:
        if document["kind"] in ("DaemonSet",) and document["__file__"] in listed:
            for c in pod_of(document)["containers"]:
                assert c["image"].split(":")[0] in images, f"{c['image']} is not set by the kustomization"


class Image:
    """What deploy/docker/Dockerfile puts in the image: the `install -m 0755 SOURCES... DESTINATION`
    lines (sources in the build stage's /build/ or the repository) and the project's install
    rules (`cmake --install`: every install(TARGETS) of the CMake files), and its USER."""

    def __init__(self, text: str) -> None:
        text = re.sub(r"\\\n", " ", text)
        stages = set(re.findall(r"^FROM\s+\S+\s+AS\s+(\S+)", text, re.MULTILINE | re.IGNORECASE))
        for source in re.findall(r"^COPY\s+--from=(\S+)", text, re.MULTILINE):
            assert source in stages, f"the Dockerfile copies from stage {source!r}, which it does not define"
        assert "cmake --install /build" in text, "the image is not made by the project's install rules"
        self.copies: list[tuple[list[str], str]] = []
        for line in re.findall(r"install -m 0755 ([^&\n]+)", text):
            *sources, destination = line.split()
            self.copies.append((sources, destination))
        users = re.findall(r"^USER\s+(\S+)", text, re.MULTILINE)
        self.user = users[-1] if users else ""
        self.cmake_programs: set[str] = set()
        self.cmake_libraries: set[str] = set()
        for cmake_lists in ROOT.glob("**/CMakeLists.txt"):
            if "build" in cmake_lists.relative_to(ROOT).parts[0]:
                continue
            for targets, kind in re.findall(r"install\(TARGETS ([^)]*?) (?:EXPORT \S+ )?(RUNTIME|LIBRARY)",
                                            cmake_lists.read_text()):
                if kind == "RUNTIME":
                    self.cmake_programs.update(targets.split())
                else:
                    self.cmake_libraries.update(f"lib{target}.so" for target in targets.split())

    def installed(self, directory: str) -> set[str]:
        """Names (glob patterns) the install lines put in /usr/local/<directory>."""
        names = set()
        for sources, destination in self.copies:
            for source in sources:
                if source.startswith("deploy/"):
                    assert (ROOT / source).is_file(), f"the Dockerfile installs {source}, which does not exist"
            if destination.rstrip("/") == f"/stage/usr/local/{directory}":
                names.update(Path(source).name for source in sources)
            elif Path(destination).parent == Path(f"/stage/usr/local/{directory}"):
                names.add(Path(destination).name)
        return names

    def programs(self) -> set[str]:
        return self.installed("bin") | self.cmake_programs

    def libraries(self) -> set[str]:
        return self.installed("lib") | self.cmake_libraries

    def built_programs(self, build: Path) -> list[Path]:
        """The build's files of the image's programs (those built in /build)."""
        paths = [build / "bin" / name for name in sorted(self.cmake_programs)]
        for sources, destination in self.copies:
            if destination.rstrip("/") == "/stage/usr/local/bin":
                for source in sources:
                    if source.startswith("/build/"):
                        found = sorted(build.glob(source[len("/build/"):]))
                        paths.extend(found or [build / source[len("/build/"):]])
        return paths


def missing_libraries(image: Image, build: Path) -> list[str]:
    """The build's own shared libraries that a program of the image loads but the image lacks."""
    missing = []
    for program in image.built_programs(build):
        assert program.is_file(), f"{program} is not built"
        linked = subprocess.run(["ldd", str(program)], capture_output=True, text=True, check=True).stdout
        for library in re.findall(r"=>\s+(\S+)", linked):
            if Path(library).resolve().is_relative_to(build.resolve()) and not any(
                    fnmatch.fnmatchcase(Path(library).name, name) for name in image.libraries()):
                missing.append(f"{program.name} needs {Path(library).name}")
    return missing


def check_dockerfile(documents: list[Document]) -> None:
    """Every program a manifest runs is in the image, which runs as the pods' uid."""
    image = Image(DOCKERFILE.read_text())
    names, user = image.programs(), image.user
    for document in documents:
        if document["kind"] not in ("DaemonSet", "Job"):
            continue
        pod = pod_of(document)
        assert str(pod["securityContext"]["runAsUser"]) == user, f"the image's USER {user} is not the pods' uid"
        for c in pod.get("initContainers", []) + pod["containers"]:
            programs = [c["command"][0]]
            if c["command"][0] == "mqx-run":
                programs.append(c["command"][c["command"].index("--") + 1])
            for program in programs:
                assert any(fnmatch.fnmatchcase(program, name) for name in names), \
                    f"{program} is not installed in the image"


STRUCTURE_CHECKS = [check_documents, check_daemonset, check_rbac, check_job, check_hardening, check_kustomization,
                    check_dockerfile]


def break_it(documents: list[Document], kind: str, change: Callable[[Document], None]) -> list[Document]:
    broken = copy.deepcopy(documents)
    change(one(broken, kind))
    return broken


def daemon_container(document: Document, name: str = "mqxd") -> Document:
    return container(pod_of(document), name)


# Each a manifest broken on purpose, the check that must refuse it, and what it must say.
Breakage = tuple[str, Callable[[list[Document]], None], str, Callable[[Document], None], str]
BREAKAGES: list[Breakage] = [
    ("no hostIPC", check_daemonset, "DaemonSet", lambda d: pod_of(d).pop("hostIPC"), "IPC namespace"),
    ("no hostPID", check_job, "Job", lambda d: pod_of(d).update(hostPID=False), "share IPC and PID"),
    ("/dev/shm not mounted", check_daemonset, "DaemonSet",
     lambda d: daemon_container(d).update(volumeMounts=[m for m in daemon_container(d)["volumeMounts"]
                                                        if m["mountPath"] != "/dev/shm"]), "/dev/shm"),
    ("/dev/shm read-only", check_job, "Job", lambda d: [m.update(readOnly=True) for m in container(
        pod_of(d), "query")["volumeMounts"] if m["mountPath"] == "/dev/shm"], "/dev/shm"),
    ("root", check_daemonset, "DaemonSet", lambda d: pod_of(d)["securityContext"].pop("runAsUser"), "runAsUser"),
    ("another uid", check_job, "Job", lambda d: pod_of(d)["securityContext"].update(runAsUser=1000), "per user"),
    ("a query not under mqx-run", check_job, "Job",
     lambda d: container(pod_of(d), "query").update(command=["./query", "--data", "/data"]), "not mqx-run"),
    ("no query after --", check_job, "Job", lambda d: container(pod_of(d), "query").update(command=["mqx-run", "--"]),
     "no query after --"),
    ("a label nobody sets", check_job, "Job", lambda d: pod_of(d)["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]["matchExpressions"][1].update(
            key="mqx/free-memory"), "mqx/free-memory, which nobody sets"),
    ("no patch on nodes", check_rbac, "ClusterRole", lambda d: d["rules"][0].update(verbs=["get"]), "patch nodes"),
    ("a beta apiVersion", check_documents, "DaemonSet", lambda d: d.update(apiVersion="extensions/v1beta1"),
     "not apps/v1"),
    ("another namespace", check_documents, "ConfigMap", lambda d: d["metadata"].update(namespace="default"),
     "not in namespace mqx"),
    ("MQX_CONFIG elsewhere", check_daemonset, "DaemonSet",
     lambda d: daemon_container(d).update(env=[{"name": "MQX_CONFIG", "value": "/etc/other/mqx.toml"}]),
     "MQX_CONFIG"),
    ("NODE_NAME not the node", check_daemonset, "DaemonSet",
     lambda d: daemon_container(d, "capacity-advertiser").update(env=[{"name": "NODE_NAME", "value": "x"}]),
     "NODE_NAME"),
    ("a capability kept", check_hardening, "Job",
     lambda d: pod_of(d)["initContainers"][0]["securityContext"]["capabilities"].update(drop=[]),
     "container ssb-data keeps capabilities"),
    ("a writable root", check_hardening, "DaemonSet",
     lambda d: daemon_container(d, "capacity-advertiser")["securityContext"].pop("readOnlyRootFilesystem"),
     "capacity-advertiser may write its root filesystem"),
    ("a program not in the image", check_dockerfile, "Job",
     lambda d: container(pod_of(d), "query").update(command=["mqx-run", "--", "tpch-q1"]),
     "tpch-q1 is not installed"),
    ("a pod of another uid than the image", check_dockerfile, "DaemonSet",
     lambda d: pod_of(d)["securityContext"].update(runAsUser=2000), "USER 10001"),
]


class StructureTest(unittest.TestCase):
    def setUp(self) -> None:
        self.documents = load_documents()

    def test_the_manifests(self) -> None:
        kinds = sorted(d["kind"] for d in self.documents)
        self.assertEqual(kinds, sorted(["Namespace", "ConfigMap", "ServiceAccount", "ClusterRole",
                                        "ClusterRoleBinding", "DaemonSet", "Job"]))
        for check in STRUCTURE_CHECKS:
            with self.subTest(check=check.__name__):
                self.assertIsNone(problems_of(check, self.documents))

    def test_the_image_has_the_libraries_its_programs_load(self) -> None:
        image = Image(DOCKERFILE.read_text())
        try:
            missing = missing_libraries(image, BUILD_DIR)
        except AssertionError as error:
            self.skipTest(f"the image's programs are not built in {BUILD_DIR} ({error})")
        self.assertEqual(missing, [])
        # Without the simulated device's library the SSB programs would not start.
        line = " && install -m 0755 /build/lib/libmqx_sim_device.so /stage/usr/local/lib/ \\\n"
        self.assertIn(line, DOCKERFILE.read_text())
        without = Image(DOCKERFILE.read_text().replace(line, ""))
        self.assertIn("ssb-q2.1 needs libmqx_sim_device.so", missing_libraries(without, BUILD_DIR))

    def test_each_check_refuses_a_broken_manifest(self) -> None:
        for what, check, kind, change, says in BREAKAGES:
            with self.subTest(broken=what):
                self.assertIsNone(problems_of(check, self.documents), "the intact manifests fail already")
                problem = problems_of(check, break_it(self.documents, kind, change))
                self.assertIsNotNone(problem, f"{check.__name__} accepts a manifest with {what}")
                self.assertIn(says, problem)


# ---- config ----------------------------------------------------------------------------------

class ConfigTest(unittest.TestCase):
    def setUp(self) -> None:
        import mqx  # noqa: PLC0415 (the build's module: PYTHONPATH)

        self.mqx = mqx
        self.documents = load_documents()
        self.text = one(self.documents, "ConfigMap")["data"]["mqx.toml"]

    def test_mqx_toml_parses_and_agrees_with_the_pods(self) -> None:
        config = self.mqx.parse_config(self.text, "deploy/kubernetes/configmap.yaml")
        port = config["daemon.metrics_port"]
        self.assertGreater(port, 0, "mqxd serves no metrics: the probes and the advertiser read them")
        daemon_pod = pod_of(one(self.documents, "DaemonSet"))
        mqxd = container(daemon_pod, "mqxd")
        urls = [probe_url(mqxd[p]) for p in ("startupProbe", "livenessProbe", "readinessProbe")]
        advertiser = container(daemon_pod, "capacity-advertiser")["command"]
        urls.append(advertiser[advertiser.index("--metrics-url") + 1])
        for url in urls:
            self.assertEqual(url, f"http://127.0.0.1:{port}/metrics", "a probe or the advertiser reads another port")
        # mqxd's root filesystem is read-only: its state file must be on a mounted volume.
        state = config["daemon.demand_state_file"]
        self.assertTrue(any(state.startswith(m["mountPath"].rstrip("/") + "/") and not m.get("readOnly")
                            for m in mqxd["volumeMounts"]), f"{state} is on no writable volume of mqxd")
        self.assertEqual(config.instance, "", "a node instance the queries' mqx-run would not find")

    def test_the_parser_is_the_project_s(self) -> None:
        with self.assertRaisesRegex(self.mqx.ConfigError, "metrics_prot"):
            self.mqx.parse_config(self.text.replace("metrics_port", "metrics_prot"))
        with self.assertRaises(self.mqx.ConfigError):
            self.mqx.parse_config(self.text.replace("admission_timeout_s = 600", 'admission_timeout_s = "soon"'))


# ---- kustomize -------------------------------------------------------------------------------

class KustomizeTest(unittest.TestCase):
    def test_kubectl_kustomize_builds_every_resource(self) -> None:
        result = subprocess.run(["kubectl", "kustomize", str(MANIFESTS)], capture_output=True, text=True, timeout=120)
        self.assertEqual(result.returncode, 0, result.stderr)
        built = [d for d in yaml.safe_load_all(result.stdout) if d]
        expected = [d for d in load_documents() if not d["__file__"].startswith("examples/")]
        self.assertEqual(sorted((d["kind"], d["metadata"]["name"]) for d in built),
                         sorted((d["kind"], d["metadata"]["name"]) for d in expected))
        kustomization = yaml.safe_load((MANIFESTS / "kustomization.yaml").read_text())
        image = kustomization["images"][0]
        wanted = f"{image.get('newName', image['name'])}:{image['newTag']}"
        for c in pod_of(one(built, "DaemonSet"))["containers"]:
            self.assertEqual(c["image"], wanted)

    def test_kubectl_kustomize_refuses_a_broken_folder(self) -> None:
        with tempfile.TemporaryDirectory() as scratch:
            shutil.copytree(MANIFESTS, scratch, dirs_exist_ok=True)
            (Path(scratch) / "mqxd-daemonset.yaml").write_text("kind: DaemonSet\nspec: [unclosed\n")
            result = subprocess.run(["kubectl", "kustomize", scratch], capture_output=True, text=True, timeout=120)
            self.assertNotEqual(result.returncode, 0, "kubectl kustomize accepted broken YAML")


MODES = {"structure": StructureTest, "config": ConfigTest, "kustomize": KustomizeTest}


def missing_tool(mode: str) -> Optional[str]:
    if yaml is None:
        return f"PyYAML is not installed for {sys.executable} (apt-get install python3-yaml)"
    if mode == "config":
        try:
            import mqx  # noqa: F401, PLC0415

            mqx.parse_config  # noqa: B018 (the extension, not only the pure-Python part)
        except (ImportError, AttributeError) as error:
            return f"the Python module mqx is not built or not on PYTHONPATH ({error})"
    if mode == "kustomize" and not shutil.which("kubectl"):
        return "kubectl is not installed"
    return None


def main() -> int:
    if len(sys.argv) != 2 or sys.argv[1] not in MODES:
        print(f"usage: {sys.argv[0]} {'|'.join(MODES)}", file=sys.stderr)
        return 2
    if not __debug__:
        print("the checks are assert statements: run without python -O", file=sys.stderr)
        return 2
    why = missing_tool(sys.argv[1])
    if why:
        print(f"SKIP: {why}")
        return SKIP
    suite = unittest.defaultTestLoader.loadTestsFromTestCase(MODES[sys.argv[1]])
    result = unittest.TextTestRunner(verbosity=2).run(suite)
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
