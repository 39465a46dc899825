"""The tunnel section's stand-in API server: a registry that is only a Service (KEP-1755
`hostFromClusterNetwork: registry.bench.svc.cluster.local:5000`, no `host`), its pod, and the pod
`portforward` subresource as the kubelet serves it: over WebSocket (`v4.channel.k8s.io`, what
kube-rs speaks: per port a data and an error channel, the port as the first frame of each) and
over SPDY/3.1 (what `kubectl port-forward` falls back to once its WebSocket try is refused), both
relaying to the real registry. Threads, one per connection; used by scripts/bench --only tunnel."""

import base64
import hashlib
import json
import os
import socket
import struct
import threading

try:
    import numpy
except ImportError:
    numpy = None

WEBSOCKET_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


def unmask(payload, mask):
    """A client's frame unmasked (RFC 6455 5.3). The real API server does this in Go at memory
    speed; pure Python's big-integer XOR costs about a second per 200 MB, which would be counted
    against the tunnel, so numpy does it where it is installed (python3 -m pip install numpy)."""
    n = len(payload)
    if numpy is None:
        key = int.from_bytes((mask * (n // 4 + 1))[:n], "big")
        return (int.from_bytes(payload, "big") ^ key).to_bytes(n, "big")
    words = n // 4
    buf = bytearray(payload)
    numpy.frombuffer(buf, dtype=numpy.uint32, count=words).__ixor__(numpy.frombuffer(mask, dtype=numpy.uint32)[0])
    for i in range(words * 4, n):
        buf[i] ^= mask[i % 4]
    return bytes(buf)


def relay_kind():
    """How the relay unmasks, for the bench's table."""
    return "numpy" if numpy is not None else "pure Python (slower: pip install numpy)"
POD = "registry-0"
NAMESPACE = "bench"


def _objects(registry_port):
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": POD, "namespace": NAMESPACE, "labels": {"app": "registry"}, "uid": "uid-registry-0"},
           "spec": {"nodeName": "node", "containers": [{"name": "registry", "image": "registry:2",
                                                        "ports": [{"containerPort": 5000}]}]},
           "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}}
    service = {"apiVersion": "v1", "kind": "Service",
               "metadata": {"name": "registry", "namespace": NAMESPACE},
               "spec": {"selector": {"app": "registry"}, "ports": [{"port": 5000, "targetPort": 5000}]}}
    configmap = {"apiVersion": "v1", "kind": "ConfigMap",
                 "metadata": {"name": "local-registry-hosting", "namespace": "kube-public"},
                 "data": {"localRegistryHosting.v1": 'hostFromClusterNetwork: "registry.bench.svc.cluster.local:5000"\n'
                                                     'hostFromContainerRuntime: "localhost:5000"\n'}}
    resources = {"kind": "APIResourceList", "groupVersion": "v1", "resources": [
        {"name": "pods", "singularName": "pod", "namespaced": True, "kind": "Pod", "shortNames": ["po"],
         "verbs": ["create", "delete", "get", "list", "watch"]},
        {"name": "pods/portforward", "singularName": "", "namespaced": True, "kind": "PodPortForwardOptions",
         "verbs": ["create", "get"]},
        {"name": "services", "singularName": "service", "namespaced": True, "kind": "Service",
         "shortNames": ["svc"], "verbs": ["get", "list"]}]}
    return {
        "/version": {"major": "1", "minor": "32", "gitVersion": "v1.32.0"},
        "/api": {"kind": "APIVersions", "versions": ["v1"],
                 "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1:6443"}]},
        "/apis": {"kind": "APIGroupList", "apiVersion": "v1", "groups": []},
        "/api/v1": resources,
        "/api/v1/namespaces/kube-public/configmaps/local-registry-hosting": configmap,
        f"/api/v1/namespaces/{NAMESPACE}/services/registry": service,
        f"/api/v1/namespaces/{NAMESPACE}/pods/{POD}": pod,
        f"/api/v1/namespaces/{NAMESPACE}/pods": {"kind": "PodList", "apiVersion": "v1", "metadata": {}, "items": [pod]},
    }


class PortForwardApiServer:
    def __init__(self, work, registry_port, context="tunnel-bench"):
        self.registry = ("127.0.0.1", registry_port)
        self.objects = _objects(registry_port)
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()
        self.kubeconfig = os.path.join(work, f"kubeconfig-{context}")
        with open(self.kubeconfig, "w") as f:
            f.write(f"apiVersion: v1\nkind: Config\ncurrent-context: {context}\n"
                    f"clusters: [{{name: {context}, cluster: {{server: 'http://127.0.0.1:{self.port}'}}}}]\n"
                    f"contexts: [{{name: {context}, context: {{cluster: {context}, user: {context}, namespace: {NAMESPACE}}}}}]\n"
                    f"users: [{{name: {context}, user: {{}}}}]\n")

    def _accept(self):
        while True:
            conn, _ = self.listener.accept()
            threading.Thread(target=self._serve_quietly, args=(conn,), daemon=True).start()

    def _serve_quietly(self, conn):
        # A client that ends (a push done, kubectl killed) resets what the relay still writes:
        # the end of that connection, as for the real API server, not the bench's failure.
        try:
            self._serve(conn)
        except OSError:
            conn.close()

    def _serve(self, conn):
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        reader = conn.makefile("rb")
        while True:
            line = reader.readline()
            if not line:
                return conn.close()
            method, target, _ = line.decode().split(" ", 2)
            headers = {}
            while True:
                header = reader.readline().decode()
                if header in ("\r\n", "\n", ""):
                    break
                name, _, value = header.partition(":")
                headers[name.strip().lower()] = value.strip()
            reader.read(int(headers.get("content-length", "0") or 0))
            path = target.split("?")[0]
            if path.endswith("/portforward"):
                return self._portforward(conn, reader, headers)
            body = self.objects.get(path)
            code, body = (200, body) if body else (404, {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                                                       "reason": "NotFound", "code": 404})
            payload = json.dumps(body).encode()
            conn.sendall(f"HTTP/1.1 {code} X\r\nContent-Type: application/json\r\nContent-Length: {len(payload)}\r\n\r\n"
                         .encode() + payload)

    def _portforward(self, conn, reader, headers):
        upgrade = headers.get("upgrade", "").lower()
        protocols = [p.strip() for p in headers.get("sec-websocket-protocol", "").split(",")]
        if upgrade == "websocket" and "v4.channel.k8s.io" in protocols:
            accept = base64.b64encode(hashlib.sha1((headers["sec-websocket-key"] + WEBSOCKET_GUID).encode()).digest())
            conn.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                         b"Sec-WebSocket-Accept: " + accept + b"\r\nSec-WebSocket-Protocol: v4.channel.k8s.io\r\n\r\n")
            return self._websocket(conn, reader)
        if upgrade == "spdy/3.1":
            conn.sendall(b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n"
                         b"X-Stream-Protocol-Version: portforward.k8s.io\r\n\r\n")
            return _Spdy(conn, reader, self.registry).serve()
        body = b'{"kind":"Status","apiVersion":"v1","status":"Failure","message":"Upgrade request required","reason":"BadRequest","code":400}'
        conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
        conn.close()

    def _websocket(self, conn, reader):
        lock = threading.Lock()

        def send(opcode, payload):
            n = len(payload)
            head = bytes([0x80 | opcode]) + (bytes([n]) if n < 126 else
                                             b"\x7e" + struct.pack(">H", n) if n < 65536 else
                                             b"\x7f" + struct.pack(">Q", n))
            with lock:
                conn.sendall(head + payload)

        send(2, b"\x00" + struct.pack("<H", 5000))
        send(2, b"\x01" + struct.pack("<H", 5000))
        pod = socket.create_connection(self.registry)
        pod.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def from_pod():
            try:
                while True:
                    data = pod.recv(256 << 10)
                    if not data:
                        break
                    send(2, b"\x00" + data)
                send(8, b"")
            except OSError:
                pass

        threading.Thread(target=from_pod, daemon=True).start()
        try:
            while True:
                head = reader.read(2)
                if len(head) < 2:
                    break
                opcode, n = head[0] & 0x0F, head[1] & 0x7F
                if n == 126:
                    n = struct.unpack(">H", reader.read(2))[0]
                elif n == 127:
                    n = struct.unpack(">Q", reader.read(8))[0]
                mask = reader.read(4) if head[1] & 0x80 else None
                payload = reader.read(n)
                if mask:
                    payload = unmask(payload, mask)
                if opcode == 8:
                    break
                if opcode in (0, 2) and len(payload) > 1 and payload[0] == 0:
                    pod.sendall(payload[1:])
        finally:
            pod.close()
            conn.close()


class _Spdy:
    """kubectl's SPDY/3.1 port-forward: streams told apart by use, as tests/support/spdy.rs does."""

    def __init__(self, conn, reader, registry):
        self.conn, self.reader, self.registry = conn, reader, registry
        self.lock = threading.Lock()
        self.started = False
        self.streams = {}

    def send(self, frame):
        with self.lock:
            self.conn.sendall(frame)

    def data(self, stream, flags, payload):
        return struct.pack(">IB", stream, flags) + len(payload).to_bytes(3, "big") + payload

    def control(self, kind, payload):
        return struct.pack(">HHB", 0x8003, kind, 0) + len(payload).to_bytes(3, "big") + payload

    def serve(self):
        while True:
            head = self.reader.read(8)
            if len(head) < 8:
                break
            n = int.from_bytes(head[5:8], "big")
            payload = self.reader.read(n)
            if head[0] & 0x80:
                kind = struct.unpack(">H", head[2:4])[0]
                if kind == 1:
                    stream = struct.unpack(">I", payload[:4])[0] & 0x7FFFFFFF
                    self.streams[stream] = None
                    block = b"" if self.started else b"\x78\x01"
                    self.started = True
                    block += b"\x00\x04\x00\xfb\xff\x00\x00\x00\x00\x00\x00\x00\xff\xff"
                    self.send(self.control(2, struct.pack(">I", stream) + block))
                elif kind == 6:
                    self.send(self.control(6, payload))
                continue
            stream, fin = struct.unpack(">I", head[:4])[0] & 0x7FFFFFFF, head[4] & 1
            if stream not in self.streams:
                continue
            if self.streams[stream] is None and payload:
                pod = socket.create_connection(self.registry)
                self.streams[stream] = pod
                threading.Thread(target=self.pump, args=(pod, stream), daemon=True).start()
            pod = self.streams[stream]
            if pod is not None:
                if payload:
                    pod.sendall(payload)
                if fin:
                    pod.shutdown(socket.SHUT_WR)
            elif fin:
                self.send(self.data(stream, 1, b""))
        self.conn.close()

    def pump(self, pod, stream):
        while True:
            data = pod.recv(256 << 10)
            if not data:
                break
            self.send(self.data(stream, 0, data))
        self.send(self.data(stream, 1, b""))
