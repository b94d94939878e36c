"""examples/service: the digits MLP trained, exported, and served over HTTP by a process that
cannot import IREE's compiler or pyree's transpiler; answers checked against NumPy, bad
requests, concurrent clients and a bounded load test on loopback."""
import http.client
import json
import os
import socket
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

pytest.importorskip("sklearn")
pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SERVICE = os.path.join(ROOT, "examples", "service")

# Serve with the compiler and the transpiler made unimportable: the service needs the runtime.
SERVER = r"""
import importlib.abc, runpy, sys
class Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[:2] == ["iree", "compiler"] or name.startswith("pyree.transpiler"):
            raise ImportError("the service must not import " + name)
sys.meta_path.insert(0, Refuse())
sys.argv = [sys.argv[1]] + sys.argv[2:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    work = tmp_path_factory.mktemp("service")
    model = work / "model.vmfb"
    done = subprocess.run([sys.executable, os.path.join(SERVICE, "export_model.py"),
                           "--epochs", "3", "-o", str(model)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    weights = np.load(work / "model.npz")
    port = _free_port()
    server = subprocess.Popen([sys.executable, "-c", SERVER, os.path.join(SERVICE, "app.py"),
                               "--model", str(model), "--port", str(port)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    while True:
        try:
            if _request(port, "GET", "/healthz")[0] == 200:
                break
        except OSError:
            pass
        if server.poll() is not None or time.time() > deadline:
            server.kill()
            raise AssertionError("the service did not start: " + server.stderr.read()[-3000:])
        time.sleep(0.2)
    yield port, weights
    server.terminate()
    server.wait(timeout=30)


def _request(port, method, path, body=None, connection=None, headers=None):
    conn = connection or http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        response = conn.getresponse()
        data = response.read()
        return response.status, json.loads(data) if data else None
    finally:
        if connection is None:
            conn.close()


def _expected(weights, rows):
    h = np.maximum(rows @ weights["w0"] + weights["b0"], 0)
    logits = h @ weights["w1"] + weights["b1"]
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _check_answer(answer, weights, rows):
    want = _expected(weights, rows)
    got = np.asarray(answer["probabilities"])
    np.testing.assert_allclose(got, want, atol=1e-4)
    np.testing.assert_array_equal(answer["classes"], np.argmax(got, axis=1))


def test_predictions_match_numpy(service):
    port, weights = service
    rng = np.random.RandomState(0)
    for n in (1, 5, 32, 33, 100):  # one call, padded, exact, split, several calls
        rows = rng.rand(n, 64).astype(np.float32)
        status, answer = _request(port, "POST", "/v1/predict",
                                  json.dumps({"instances": rows.tolist()}))
        assert status == 200, answer
        assert len(answer["classes"]) == n
        _check_answer(answer, weights, rows)
    status, described = _request(port, "GET", "/v1/model")
    assert status == 200 and described["functions"]["predict"]["inputs"] == ["f32[32,64]"]


def test_bad_requests_get_4xx_and_the_service_keeps_serving(service):
    port, weights = service
    row = [0.5] * 64
    cases = [
        (b"{not json", 400, "malformed JSON"),
        (json.dumps({"rows": [row]}), 422, "instances"),
        (json.dumps({"instances": []}), 422, "non-empty"),
        (json.dumps({"instances": [row[:10]]}), 422, "row 0 must be a list of 64 numbers"),
        (json.dumps({"instances": [row[:-1] + ["x"]]}), 422, "not a finite float32 number"),
        (json.dumps({"instances": [row[:-1] + [10 ** 400]]}), 422, "not a finite float32"),
        (json.dumps({"instances": [row[:-1] + [1e39]]}), 422, "not a finite float32"),
        (json.dumps({"instances": [row[:-1] + [-3.5e38]]}), 422, "not a finite float32"),
        (b'{"instances": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", 400, "nested too deeply"),
        (json.dumps({"instances": [row] * 1025}), 413, "limit of 1024"),
        (b"[" + b"0.5, " * 300_000 + b"0.5]", 413, "over the limit"),
    ]
    for body, status, message in cases:
        got_status, answer = _request(port, "POST", "/v1/predict", body)
        assert got_status == status and message in answer["error"], (status, answer)
    assert _request(port, "GET", "/v1/predict")[0] == 405
    rows = np.full((2, 64), 0.25, np.float32)
    status, answer = _request(port, "POST", "/v1/predict", json.dumps({"instances": rows.tolist()}))
    assert status == 200
    _check_answer(answer, weights, rows)


def test_concurrent_clients_and_bounded_load(service):
    port, weights = service
    rng = np.random.RandomState(1)
    payloads = [rng.rand(int(rng.randint(1, 9)), 64).astype(np.float32) for _ in range(16)]
    bodies = [json.dumps({"instances": p.tolist()}) for p in payloads]
    wanted = [np.argmax(_expected(weights, p), axis=1).tolist() for p in payloads]
    latencies, failures = [], []
    lock = threading.Lock()
    stop_at = time.perf_counter() + 5.0  # the load test is bounded: 5 s of traffic

    def client(seed):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        i = seed
        try:
            while time.perf_counter() < stop_at:
                k = i % len(bodies)
                start = time.perf_counter()
                status, answer = _request(port, "POST", "/v1/predict", bodies[k], conn,
                                          {"Content-Type": "application/json"})
                elapsed = time.perf_counter() - start
                with lock:
                    latencies.append(elapsed)
                    if status != 200 or answer["classes"] != wanted[k]:
                        failures.append((status, answer))
                i += 7
        finally:
            conn.close()

    threads = [threading.Thread(target=client, args=(s,)) for s in range(8)]
    began = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - began
    assert not failures, failures[:3]
    assert len(latencies) >= 8
    ms = np.sort(np.asarray(latencies)) * 1e3
    print(f"\nservice load test: 8 clients, {len(ms)} requests in {wall:.1f} s: "
          f"{len(ms) / wall:.0f} requests/s, p50 {np.percentile(ms, 50):.2f} ms, "
          f"p99 {np.percentile(ms, 99):.2f} ms")
