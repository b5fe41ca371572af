"""Drives loom-serve over HTTP and checks what it answers.

Starts the server on a free port (--port 0) with an MLP (`mlp`, batched
along its dynamic dim 0) and a two-input add (`add`), then checks, printing
one line per group for FileCheck: metadata and health, an inference
against loom-run's output for the same input, the 4xx answers, many
concurrent clients (each answer checked against its rows of loom-run's
output), dynamic batching in /metrics, the body limit, and a SIGTERM
while requests are in flight (they finish; the server exits 0).

usage: serve_check.py --server loom-serve --mlp MLP.loom --add ADD.loom
                      --x X.npy --y Y.npy
"""

import argparse
import http.client
import json
import random
import re
import signal
import socket
import subprocess
import sys
import threading
import time

import numpy as np


def start(server, models, *flags):
    cmd = [server, "--port", "0"]
    for name, path in models.items():
        cmd += ["--model", f"{name}={path}"]
    cmd += list(flags)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    deadline = time.time() + 20
    while time.time() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        m = re.search(r"listening on [0-9.]+:(\d+)", line)
        if m:
            return proc, int(m.group(1))
    proc.kill()
    sys.exit("loom-serve did not start: " + " ".join(cmd))


def request(port, method, path, body=None, headers=None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    if isinstance(body, (dict, list)):
        body = json.dumps(body)
    conn.request(method, path, body=body, headers=headers or {})
    res = conn.getresponse()
    data = res.read()
    conn.close()
    return res.status, data


def expect(cond, what):
    if not cond:
        sys.exit("FAILED: " + what)


def infer_body(x, rows, **extra):
    part = x[rows[0]:rows[1]]
    body = {"inputs": [{"name": "x", "shape": list(part.shape),
                        "datatype": "FP32", "data": part.ravel().tolist()}]}
    body.update(extra)
    return body


def expect_error(port, path, body, status, fragment, headers=None):
    got, data = request(port, "POST", path, body, headers)
    expect(got == status, f"{fragment}: status {got}, expected {status}: {data[:200]!r}")
    message = json.loads(data)["error"]
    expect(fragment in message, f"'{fragment}' not in {message!r}")


def metric(text, name, labels):
    for line in text.splitlines():
        if line.startswith(name + "{" + labels + "}"):
            return float(line.rsplit(" ", 1)[1])
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    ap.add_argument("--mlp", required=True)
    ap.add_argument("--add", required=True)
    ap.add_argument("--x", required=True)
    ap.add_argument("--y", required=True)
    args = ap.parse_args()
    x, y = np.load(args.x), np.load(args.y)
    models = {"mlp": args.mlp, "add": args.add}

    proc, port = start(args.server, models, "--threads", "32", "--max-batch",
                       "16", "--max-wait-ms", "20", "--max-body-bytes",
                       "1000000")
    try:
        # Health and metadata.
        for path in ["/v2/health/live", "/v2/health/ready", "/health",
                     "/v2/models/mlp/ready"]:
            status, _ = request(port, "GET", path)
            expect(status == 200, f"{path}: {status}")
        status, data = request(port, "GET", "/v2")
        expect(status == 200 and json.loads(data)["name"] == "loom-serve", "/v2")
        status, data = request(port, "GET", "/v2/models/mlp")
        meta = json.loads(data)
        expect(status == 200 and meta["platform"] == "loom", f"metadata {data!r}")
        expect(meta["inputs"] == [{"name": "x", "datatype": "FP32",
                                   "shape": [-1, 16]}], f"inputs {meta['inputs']}")
        expect(meta["outputs"][0]["shape"] == [-1, 10], f"outputs {meta}")
        for path in ["/v2/models/nope", "/v2/models/nope/ready"]:
            status, data = request(port, "GET", path)
            expect(status == 404 and b"error" in data, f"{path}: {status}")
        # A second server on the same port fails instead of sharing it.
        second = subprocess.run([args.server, "--model", f"mlp={args.mlp}",
                                 "--port", str(port)], capture_output=True,
                                text=True, timeout=20)
        expect(second.returncode == 1 and "cannot listen" in second.stderr,
               f"second server on the port: {second.returncode} {second.stderr}")
        print("metadata ok")

        # One inference, against loom-run's output.
        status, data = request(port, "POST", "/v2/models/mlp/infer",
                               infer_body(x, (0, 64), id="req-1"))
        expect(status == 200, f"infer: {status} {data[:200]!r}")
        res = json.loads(data)
        expect(res["model_name"] == "mlp" and res["id"] == "req-1", "infer id")
        out = res["outputs"][0]
        expect(out["name"] == "output" and out["datatype"] == "FP32" and
               out["shape"] == [64, 10], f"output {out['shape']}")
        got = np.array(out["data"], np.float32).reshape(64, 10)
        expect(np.allclose(got, y, rtol=1e-5, atol=1e-6),
               f"infer result differs from loom-run's: {np.abs(got - y).max()}")
        # Asking for an output by name; the two-input model.
        status, data = request(port, "POST", "/v2/models/mlp/infer",
                               infer_body(x, (0, 1), outputs=[{"name": "output"}]))
        expect(status == 200, "outputs by name")
        ones = {"name": "a", "shape": [2, 4], "datatype": "FP32", "data": [1] * 8}
        twos = {"name": "b", "shape": [2, 4], "datatype": "FP32",
                "data": [[2, 2, 2, 2], [2, 2, 2, 2]]}
        status, data = request(port, "POST", "/v2/models/add/infer",
                               {"inputs": [twos, ones]})
        expect(status == 200 and json.loads(data)["outputs"][0]["data"] == [3.0] * 8,
               f"add: {data[:200]!r}")
        print("infer ok")

        # Bad requests: 4xx with a message, and the server goes on.
        path = "/v2/models/mlp/infer"
        good = infer_body(x, (0, 2))
        def with_input(**changes):
            body = json.loads(json.dumps(good))
            body["inputs"][0].update(changes)
            return body
        expect_error(port, path, with_input(datatype="FP64"), 400,
                     "has datatype FP64, the model expects FP32[batch, 16]")
        expect_error(port, path, with_input(datatype="COMPLEX"), 400,
                     "unknown datatype")
        expect_error(port, path, with_input(shape=[2, 15]), 400,
                     "has shape [2, 15]")
        expect_error(port, path, with_input(shape=[2, -16]), 400,
                     "non-negative integers")
        expect_error(port, path, with_input(shape=[2, 8]), 400, "has shape")
        expect_error(port, path, with_input(shape=[3, 16]), 400,
                     "has 32 data elements, its shape [3, 16] holds 48")
        expect_error(port, path, with_input(shape=[1000000000000, 16]), 400,
                     "has 32 data elements")
        expect_error(port, path, with_input(shape=[2 ** 62, 16]), 400,
                     "more data elements than its shape")
        expect_error(port, path, with_input(data=["a"] * 32), 400,
                     "is not a FP32 value")
        expect_error(port, path, with_input(name="y"), 400, "unknown input")
        expect_error(port, path, {"inputs": []}, 400, "input 'x' is missing")
        expect_error(port, path, {"inputs": good["inputs"] * 2}, 400,
                     "given twice")
        expect_error(port, path, {"input": []}, 400, "'inputs' must be")
        expect_error(port, path, dict(good, outputs=[{"name": "zz"}]), 400,
                     "unknown output")
        expect_error(port, path, '{"inputs": [', 400, "malformed JSON")
        expect_error(port, path, "[" * 100000 + "]" * 100000, 400,
                     "nests deeper than")
        expect_error(port, path, "\xff\xfe", 400, "malformed JSON")
        expect_error(port, "/v2/models/add/infer",
                     {"inputs": [dict(ones, shape=[2, 4]),
                                 dict(twos, name="b", shape=[1, 4],
                                      data=[2] * 4)]},
                     400, "dim 'batch' is 2 in input 'a' dim 0 but 1")
        expect_error(port, "/v2/models/nope/infer", good, 404, "unknown model")
        expect_error(port, path, good, 400, "binary tensor data",
                     {"Inference-Header-Content-Length": "10"})
        expect_error(port, path, "x" * 2000000, 413, "larger than the limit")
        status, _ = request(port, "GET", "/v2/nothing/here")
        expect(status == 404, "unknown endpoint")
        status, _ = request(port, "GET", "/v2/health/ready")
        expect(status == 200, "alive after bad requests")
        print("errors ok")

        # Mutated requests (bytes flipped, cut, spliced, JSON tokens put in)
        # and raw garbage on the socket: each is answered with JSON, none
        # with a 5xx, and the server lives on.
        rng = random.Random(1)
        valid = [json.dumps(good), json.dumps({"inputs": [ones, twos]})]
        tokens = ["[", "]", "{", "}", '"', ",", ":", "-1", "1e400", "null",
                  "9223372036854775808", "true", '"x"', "\\u0000", "[[[[",
                  '"shape"', '"data"', '"INT8"', '"BOOL"', "\xff"]
        codes = {}
        for _ in range(1500):
            body = list(rng.choice(valid))
            for _ in range(rng.randint(1, 6)):
                i, op = rng.randint(0, len(body)), rng.randint(0, 4)
                if op == 0 and body:
                    body[min(i, len(body) - 1)] = chr(rng.randint(0, 255))
                elif op == 1:
                    body[i:i] = list(rng.choice(tokens))
                elif op == 2:
                    del body[i:i + rng.randint(1, 20)]
                elif op == 3:
                    body = body[:i]
                else:
                    j = rng.randint(0, len(body))
                    body[i:i] = body[j:j + rng.randint(1, 50)]
            model = rng.choice(["mlp", "add"])
            status, data = request(port, "POST", f"/v2/models/{model}/infer",
                                   "".join(body).encode("latin-1"))
            codes[status] = codes.get(status, 0) + 1
            expect(status in (200, 400), f"mutated request: {status} {data[:200]!r}")
            expect(status == 200 or "error" in json.loads(data), "error body")
        for k in range(60):
            junk = bytes(rng.randint(0, 255) for _ in range(rng.randint(0, 3000)))
            if k % 3 == 0:
                junk = (b"POST /v2/models/mlp/infer HTTP/1.1\r\nContent-Length: " +
                        str(rng.randint(-5, 10 ** 12)).encode() + b"\r\n\r\n" + junk)
            with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
                try:
                    sock.sendall(junk)
                    sock.shutdown(socket.SHUT_WR)
                    sock.recv(100)
                except OSError:
                    pass
        expect(proc.poll() is None, "the server died")
        status, _ = request(port, "GET", "/v2/health/ready")
        expect(status == 200, "alive after mutated requests")
        print(f"mutated requests ok: {sum(codes.values())}")

        # Many clients at once: each answer is its own rows' result.
        failures = []
        def client(k):
            rng = np.random.default_rng(k)
            for _ in range(8):
                lo = int(rng.integers(0, 60))
                hi = lo + int(rng.integers(1, 5))
                try:
                    status, data = request(port, "POST", path,
                                           infer_body(x, (lo, hi), id=str(k)))
                except OSError as e:
                    failures.append(f"rows {lo}:{hi}: {e}")
                    continue
                if status != 200:
                    failures.append(f"{status} {data[:100]!r}")
                    continue
                res = json.loads(data)
                got = np.array(res["outputs"][0]["data"], np.float32)
                if res["id"] != str(k) or not np.allclose(
                        got.reshape(hi - lo, 10), y[lo:hi], rtol=1e-5,
                        atol=1e-6):
                    failures.append(f"rows {lo}:{hi} differ")
        threads = [threading.Thread(target=client, args=(k,)) for k in range(48)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        expect(not failures, f"{len(failures)} failures: {failures[:3]}")
        print("concurrency ok: 384 requests")

        status, data = request(port, "GET", "/metrics")
        text = data.decode()
        batches = metric(text, "loom_serve_batch_size_count", 'model="mlp"')
        single = metric(text, "loom_serve_batch_size_bucket", 'model="mlp",le="1"')
        served = metric(text, "loom_serve_batch_size_sum", 'model="mlp"')
        expect(batches and single is not None and batches > single,
               f"no batch of more than one request: {batches} runs, {single} single")
        expect(served > batches, "batches merged requests")
        ok = metric(text, "loom_serve_requests_total", 'model="mlp",code="200"')
        bad = metric(text, "loom_serve_requests_total", 'model="mlp",code="400"')
        expect(ok is not None and ok >= 2 + 384 and bad is not None and bad >= 17,
               f"counts {ok} {bad}")
        for name in ["loom_serve_arena_bytes", "loom_serve_run_contexts"]:
            value = metric(text, name, 'model="mlp"')
            expect(value is not None and value > 0, name)
        expect("loom_serve_request_duration_seconds_bucket" in text, "latency")
        expect("loom_serve_inflight_requests 0" in text, "in flight")
        print("batching ok")
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=20)
    expect(code == 0, f"exit code {code}")

    # SIGTERM while requests wait in a batch: they are answered, then the
    # server exits 0 and stops listening.
    proc, port = start(args.server, models, "--max-batch", "64",
                       "--max-wait-ms", "1000")
    results = []
    def slow():
        results.append(request(port, "POST", "/v2/models/mlp/infer",
                               infer_body(x, (0, 2)))[0])
    threads = [threading.Thread(target=slow) for _ in range(3)]
    for t in threads:
        t.start()
    time.sleep(0.3)
    proc.send_signal(signal.SIGTERM)
    for t in threads:
        t.join()
    code = proc.wait(timeout=20)
    expect(results == [200, 200, 200], f"in-flight answers {results}")
    expect(code == 0, f"exit code after SIGTERM {code}")
    try:
        request(port, "GET", "/v2/health/live")
        expect(False, "still listening after SIGTERM")
    except OSError:
        pass
    print("sigterm ok")


if __name__ == "__main__":
    main()
