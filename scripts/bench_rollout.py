"""The rollout section of scripts/bench (`--only rollout`): from the end of a rebuild to the new pod Ready.

A real dockerd rebuilds `benchapp:dev` (one 8 MB layer added on a small base); a stand-in API server plays
the Deployment controller and the kubelet: a patch of the pod template makes a new pod, whose image the
kubelet pulls with a real containerd (`ctr images pull` through kind's hosts.toml) from the real registry,
then marks it Ready and the old pod gone; it serves what `kubectl set image` and `kubectl rollout status`
read (discovery, GET, strategic-merge PATCH, list and watch) and what `push --rollout` reads (the same,
pods, SelfSubjectAccessReview). Side by side, each rebuild:

  ours:   `kubectl registry push benchapp:dev --watch --rollout deploy/app`, kept running
  script: `ref=$(kubectl registry push benchapp:dev); kubectl set image deploy/app app=$ref;
           kubectl rollout status deploy/app`

The time is from `docker build` returning to the stand-in marking the new pod Ready, and itemised: to the
ref printed (ours: noticing the build and the push; the script: the push), to the PATCH at the API server,
to the new pod Ready (the controller, the pull, ready); inside the push, the laps `-vv` says (`push round:`).
"""

import http.server
import json
import os
import re
import subprocess
import threading
import time


class Cluster:
    """One Deployment `app` (1 replica) and its pods, rolled on a template patch."""

    def __init__(self, work, registry_host, runtime_host, pull_argv):
        self.lock = threading.Condition()
        self.version = 1
        self.pull_argv = pull_argv
        self.ready_at = {}  # image -> time.monotonic() when its pod became Ready
        self.patched_at = {}  # image -> time.monotonic() when the template's PATCH set it
        self.deployment = {
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "app", "namespace": "default", "generation": 1, "resourceVersion": "1",
                         "uid": "uid-app"},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "app"}},
                     "template": {"metadata": {"labels": {"app": "app"}},
                                  "spec": {"containers": [{"name": "app", "image": f"{runtime_host}/benchapp:old"}]}}},
            "status": {"observedGeneration": 1, "replicas": 1, "updatedReplicas": 1, "readyReplicas": 1,
                       "availableReplicas": 1},
        }
        self.pods = {}
        configmap = {"apiVersion": "v1", "kind": "ConfigMap",
                     "metadata": {"name": "local-registry-hosting", "namespace": "kube-public"},
                     "data": {"localRegistryHosting.v1": f'host: "{registry_host}"\n'
                                                         f'hostFromContainerRuntime: "{runtime_host}"\n'}}
        self.configmap = configmap
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), self.handler())
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.kubeconfig = os.path.join(work, "kubeconfig-rollout")
        with open(self.kubeconfig, "w") as f:
            f.write("apiVersion: v1\nkind: Config\ncurrent-context: kind-bench\n"
                    f"clusters: [{{name: kind-bench, cluster: {{server: 'http://127.0.0.1:{self.server.server_port}'}}}}]\n"
                    "contexts: [{name: kind-bench, context: {cluster: kind-bench, user: kind-bench}}]\n"
                    "users: [{name: kind-bench, user: {}}]\n")

    def bump(self):
        self.version += 1
        return str(self.version)

    def patch(self, body):
        with self.lock:
            for container in body.get("spec", {}).get("template", {}).get("spec", {}).get("containers", []):
                for mine in self.deployment["spec"]["template"]["spec"]["containers"]:
                    if mine["name"] == container.get("name"):
                        mine.update({k: v for k, v in container.items() if not k.startswith("$")})
            meta = self.deployment["metadata"]
            meta["generation"] += 1
            meta["resourceVersion"] = self.bump()
            generation = meta["generation"]
            image = self.deployment["spec"]["template"]["spec"]["containers"][0]["image"]
            self.patched_at[image] = time.monotonic()
            self.lock.notify_all()
        threading.Thread(target=self.roll, args=(generation, image), daemon=True).start()
        return self.deployment

    def roll(self, generation, image):
        """The controller observes and makes the pod; the kubelet pulls it with containerd; Ready."""
        name = f"app-{generation}"
        with self.lock:
            status = self.deployment["status"]
            status.update(observedGeneration=generation, replicas=2, updatedReplicas=1, availableReplicas=1)
            self.pods[name] = {"apiVersion": "v1", "kind": "Pod",
                               "metadata": {"name": name, "namespace": "default", "labels": {"app": "app"},
                                            "resourceVersion": self.bump()},
                               "spec": {"nodeName": "node", "containers": [{"name": "app", "image": image}]},
                               "status": {"phase": "Pending"}}
            self.deployment["metadata"]["resourceVersion"] = self.bump()
            self.lock.notify_all()
        subprocess.run(self.pull_argv(image), check=True, capture_output=True)
        with self.lock:
            self.ready_at[image] = time.monotonic()
            self.pods = {name: self.pods[name]}
            self.pods[name]["metadata"]["resourceVersion"] = self.bump()
            self.pods[name]["status"] = {
                "phase": "Running", "conditions": [{"type": "Ready", "status": "True"}],
                "containerStatuses": [{"name": "app", "image": image, "ready": True, "restartCount": 0,
                                       "state": {"running": {}}}]}
            self.deployment["status"].update(replicas=1, updatedReplicas=1, readyReplicas=1, availableReplicas=1)
            self.deployment["metadata"]["resourceVersion"] = self.bump()
            self.lock.notify_all()

    def wait_ready(self, image, timeout=120):
        deadline = time.monotonic() + timeout
        with self.lock:
            while image not in self.ready_at:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise SystemExit(f"bench: {image} never became Ready")
                self.lock.wait(left)
            return self.ready_at[image]

    def handler(self):
        cluster = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Go (kube-apiserver) sets TCP_NODELAY on every connection: no Nagle stall on small answers.
            disable_nagle_algorithm = True

            def send(self, code, obj, content_type="application/json"):
                payload = obj if isinstance(obj, bytes) else json.dumps(obj).encode()
                self.send_response(code)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def body(self):
                length = int(self.headers.get("Content-Length") or 0)
                return json.loads(self.rfile.read(length) or b"{}")

            def do_GET(self):
                path, _, query = self.path.partition("?")
                apps = {"name": "apps", "versions": [{"groupVersion": "apps/v1", "version": "v1"}],
                        "preferredVersion": {"groupVersion": "apps/v1", "version": "v1"}}
                if path == "/api":
                    return self.send(200, {"kind": "APIVersions", "versions": ["v1"]})
                if path == "/apis":
                    return self.send(200, {"kind": "APIGroupList", "apiVersion": "v1", "groups": [apps]})
                if path == "/apis/apps/v1":
                    return self.send(200, {"kind": "APIResourceList", "groupVersion": "apps/v1", "resources": [
                        {"name": "deployments", "singularName": "deployment", "namespaced": True, "kind": "Deployment",
                         "verbs": ["get", "list", "watch", "patch"], "shortNames": ["deploy"]}]})
                if path == "/api/v1":
                    return self.send(200, {"kind": "APIResourceList", "groupVersion": "v1", "resources": [
                        {"name": "pods", "singularName": "pod", "namespaced": True, "kind": "Pod",
                         "verbs": ["get", "list", "watch"]}]})
                if path.startswith("/api/v1/namespaces/kube-public/configmaps/local-registry-hosting"):
                    return self.send(200, cluster.configmap)
                if path == "/apis/apps/v1/namespaces/default/deployments/app":
                    with cluster.lock:
                        return self.send(200, cluster.deployment)
                watching = "watch=true" in query or "watch=1" in query
                if path == "/apis/apps/v1/namespaces/default/deployments":
                    if watching:
                        return self.watch(query, lambda: {"app": cluster.deployment}, ("apps/v1", "Deployment"))
                    with cluster.lock:
                        return self.send(200, {"kind": "DeploymentList", "apiVersion": "apps/v1",
                                               "metadata": {"resourceVersion": str(cluster.version)},
                                               "items": [cluster.deployment]})
                if path == "/api/v1/namespaces/default/pods":
                    if watching:
                        return self.watch(query, lambda: dict(cluster.pods), ("v1", "Pod"))
                    with cluster.lock:
                        return self.send(200, {"kind": "PodList", "apiVersion": "v1",
                                               "metadata": {"resourceVersion": str(cluster.version)},
                                               "items": list(cluster.pods.values())})
                self.send(404, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound",
                                "code": 404})

            def watch(self, query, objects, kind_of):
                """ADDED/MODIFIED/DELETED from the resourceVersion asked (all ADDED from none), until
                timeoutSeconds, as a real API server streams a watch. A watch-list
                (sendInitialEvents=true: client-go's default from kubectl 1.35 on) gets the ADDED ones,
                then a BOOKMARK annotated k8s.io/initial-events-end at the version they were read at."""
                params = dict(pair.partition("=")[::2] for pair in query.split("&") if pair)
                since = int(params.get("resourceVersion") or 0)
                deadline = time.monotonic() + min(int(params.get("timeoutSeconds") or 60), 60)
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                with cluster.lock:
                    sent = {name: obj["metadata"]["resourceVersion"] for name, obj in objects().items()
                            if since and int(obj["metadata"]["resourceVersion"]) <= since}
                    bookmarked = False
                    while time.monotonic() < deadline:
                        now = objects()
                        events = []
                        for name in [n for n in sent if n not in now]:
                            sent.pop(name)
                            events.append(("DELETED", {"apiVersion": "v1", "kind": "Pod",
                                                       "metadata": {"name": name, "namespace": "default",
                                                                    "resourceVersion": str(cluster.version)}}))
                        for name, obj in now.items():
                            version = obj["metadata"]["resourceVersion"]
                            if sent.get(name) != version:
                                events.append(("MODIFIED" if name in sent else "ADDED", obj))
                                sent[name] = version
                        if params.get("sendInitialEvents") == "true" and not bookmarked:
                            bookmarked = True
                            api_version, kind = kind_of
                            events.append(("BOOKMARK", {
                                "apiVersion": api_version, "kind": kind,
                                "metadata": {"resourceVersion": str(cluster.version),
                                             "annotations": {"k8s.io/initial-events-end": "true"}}}))
                        for kind, obj in events:
                            event = (json.dumps({"type": kind, "object": obj}) + "\n").encode()
                            try:
                                self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
                                self.wfile.flush()
                            except OSError:
                                return
                        cluster.lock.wait(max(0.0, min(1.0, deadline - time.monotonic())))
                try:
                    self.wfile.write(b"0\r\n\r\n")
                except OSError:
                    pass  # the client went first (a watch it no longer needs)

            def do_PATCH(self):
                if "dryRun" in self.path:
                    self.body()
                    with cluster.lock:
                        return self.send(200, cluster.deployment)
                self.send(200, cluster.patch(self.body()))

            def do_POST(self):
                review = self.body()
                review["status"] = {"allowed": True}
                self.send(201, review)

            def log_message(self, *args):
                pass

        return Handler


def rollout_section(args, work, ours, registry, containerd, dockerd_class, runtime_host):
    """Median seconds from the end of a rebuild to the new pod Ready, ours (`--watch --rollout`)
    against the script, over `args.runs` rebuilds each."""
    dockerd = dockerd_class()
    results = {"ours": [], "script": []}
    try:
        base = os.path.join(work, "rollout-base.bin")
        with open(base, "wb") as f:
            f.write(os.urandom(4 << 20))
        dockerd.build("scratch", base, "benchapp:base")
        for who in ("ours", "script"):
            registry.stop()
            registry.start()
            containerd.stop()
            containerd.start(registry.host)
            cluster = Cluster(work, registry.host, runtime_host, containerd.pull_argv)
            env = dict(dockerd.env, KUBECONFIG=cluster.kubeconfig)
            watcher, watcher_lines = None, None

            def round_(run):
                """A rebuild adding one 8 MB layer: its ref and where the time went from the build's end."""
                layer = os.path.join(work, f"rollout-{who}-{run}.bin")
                with open(layer, "wb") as f:
                    f.write(os.urandom(8 << 20))
                dockerd.build("benchapp:base", layer, "benchapp:dev")
                built = time.monotonic()
                if who == "ours":
                    ref = watcher.stdout.readline().strip()
                    ref_at = time.monotonic()
                    round_laps = laps_of([watcher_lines.next("push round: ") or ""])
                else:
                    push = subprocess.run([ours, "push", "benchapp:dev", "-vv"], env=env, check=True,
                                          capture_output=True, text=True)
                    ref, ref_at = push.stdout.strip(), time.monotonic()
                    round_laps = laps_of(push.stderr.splitlines())
                    subprocess.run(["kubectl", "set", "image", "deploy/app", f"app={ref}"], env=env,
                                   check=True, capture_output=True)
                    subprocess.run(["kubectl", "rollout", "status", "deploy/app", "--timeout=120s"], env=env,
                                   check=True, capture_output=True)
                ready = cluster.wait_ready(ref)
                return {"total": ready - built, "ref": ref_at - built,
                        "patch": cluster.patched_at[ref] - ref_at, "ready": ready - cluster.patched_at[ref],
                        "laps": round_laps}

            try:
                if who == "ours":
                    dockerd.build("benchapp:base", base, "benchapp:dev")
                    watcher = subprocess.Popen([ours, "push", "benchapp:dev", "--watch", "--rollout", "deploy/app",
                                                "-vv"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                               text=True)
                    watcher_lines = Lines(watcher.stderr)
                    cluster.wait_ready(watcher.stdout.readline().strip())
                    watcher_lines.next("push round: ")  # the first push's, not a rebuild's
                else:
                    round_(0)  # the first push: not a rebuild's loop
                for run in range(1, args.runs + 1):
                    results[who].append(round_(run))
            finally:
                if watcher:
                    watcher.kill()
                    watcher.wait()
                cluster.server.shutdown()
    finally:
        dockerd.stop()
    return results


class Lines:
    """A process's stderr read on a thread of its own (so it never fills its pipe), line by line."""

    def __init__(self, stream):
        self.lock = threading.Condition()
        self.lines = []
        self.taken = 0
        threading.Thread(target=self.read, args=(stream,), daemon=True).start()

    def read(self, stream):
        for line in stream:
            with self.lock:
                self.lines.append(line.rstrip("\n"))
                self.lock.notify_all()

    def next(self, prefix, timeout=3):
        """The next line (after the last one taken) that starts with `prefix`; waited for (None: none came)."""
        deadline = time.monotonic() + timeout
        with self.lock:
            while time.monotonic() < deadline:
                while self.taken < len(self.lines):
                    self.taken += 1
                    if self.lines[self.taken - 1].startswith(prefix):
                        return self.lines[self.taken - 1]
                self.lock.wait(max(0.0, deadline - time.monotonic()))
            return None  # a build that does not say its laps


LAP = re.compile(r"([a-z][a-z ]*?) (\d+) ms")


def laps_of(lines):
    """`push round: inspect 3 ms, open and discover 2 ms, ...` (the first such line: up to the push's end)
    as {name: ms}."""
    for line in lines:
        if line.startswith("push round: "):
            return {name: int(ms) for name, ms in LAP.findall(line[len("push round: "):]) if name != "in all"}
    return {}
