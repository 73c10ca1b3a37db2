"""No client can deny the others, and no input gets a 500 or leaks a path: a real server on
127.0.0.1 with small limits, hostile clients from 127.0.0.1 and a normal client from 127.0.0.2
(another loopback address: another client to the per-client limit). Every socket is closed at
the end; the server stops with SIGTERM."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time

import httpx
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from serve_helpers import REPO, Server  # noqa: E402

OTHER = "127.0.0.2"


@pytest.fixture(scope="module")
def guarded(model_dir, words_artifact):
    s = Server(["--model", model_dir, "--device", "cpu", "--batch-size", "4", "--max-body", "20000",
                "--constraints", f"animals={words_artifact}", "--max-connections-per-client", "300",
                "--max-connections", "4000", "--header-timeout", "3", "--body-timeout", "3", "--idle-timeout", "2",
                "--max-artifacts", "3", "--timeout", "60"])
    yield s
    assert s.stop() == 0


def _other_client(server) -> httpx.Client:
    return httpx.Client(base_url=server.url, transport=httpx.HTTPTransport(local_address=OTHER), timeout=30)


def _connect(url: str) -> socket.socket:
    host, port = url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=10)
    return sock


def test_idle_and_slow_header_connections_leave_others_answered(guarded):
    import select

    socks = []
    try:
        slow = []
        for _ in range(200):  # connections that drip their headers (admitted: under the per-client limit)
            s = _connect(guarded.url)
            s.sendall(b"P")
            slow.append(s)
        socks += slow
        for _ in range(1000):  # connections that send nothing (the last 900 over the limit of 300 per client)
            socks.append(_connect(guarded.url))
        with _other_client(guarded) as c:
            t0 = time.monotonic()
            assert c.get("/health").json()["status"] == "ok"
            r = c.post("/v1/completions", json={"prompt": "the cat", "max_tokens": 2})
            took = time.monotonic() - t0
        assert r.status_code == 200 and took < 2.0, (r.text, took)
        # the excess over 300 per client is refused at once with a JSON 429
        refused = socks[400]
        refused.settimeout(5)
        head = refused.recv(4096)
        assert head.startswith(b"HTTP/1.1 429") and b'"param"' in head and b"application/json" in head
        # a connection that drips its headers is answered 408 and closed within the header timeout (3 s)
        t0 = time.monotonic()
        while not select.select([slow[0]], [], [], 0.5)[0]:
            assert time.monotonic() - t0 < 10, "no answer to a connection whose headers never end"
            slow[0].sendall(b"O")
        slow[0].settimeout(5)
        assert slow[0].recv(4096).startswith(b"HTTP/1.1 408")
    finally:
        for s in socks:
            s.close()


def _raw(server, head: bytes, body: bytes = b"", pause: float = 0.0) -> tuple[int, dict]:
    s = _connect(server.url)
    try:
        s.sendall(head)
        if pause:
            time.sleep(pause)
        if body:
            s.sendall(body)
        s.settimeout(30)
        data = b""
        while b"\r\n\r\n" not in data or len(data.split(b"\r\n\r\n", 1)[1]) < _length(data):
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
        status = int(data.split(b" ", 2)[1])
        return status, json.loads(data.split(b"\r\n\r\n", 1)[1] or b"{}")
    finally:
        s.close()


def _length(data: bytes) -> int:
    for line in data.split(b"\r\n\r\n", 1)[0].split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            return int(line.split(b":")[1])
    return 0


def test_oversized_chunked_body_is_413(guarded):
    chunk = b"x" * 8000
    body = b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for _ in range(4)) + b"0\r\n\r\n"
    status, err = _raw(guarded, b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                                b"Transfer-Encoding: chunked\r\n\r\n", body)
    assert status == 413 and err["error"]["param"] == "body"


def test_a_body_that_does_not_arrive_is_408(guarded):
    status, err = _raw(guarded, b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                                b"Content-Length: 100\r\n\r\n{\"prompt\"", pause=0)
    assert status == 408 and "did not arrive" in err["error"]["message"]


HOSTILE = [
    (b"[" * 10000 + b"]" * 10000, 400),
    (b'{"prompt": "x", "constraints": {"grammar": "cefr", "grammar_params": {"level": "\\ud800"}}}', 400),
    (b'{"prompt": "\\udfff"}', 400),
    (b'{"prompt": "x", "user": "\\ud83d"}', 400),
    (b"", 400),
    (b"null", 400),
    (b"[1, 2]", 400),
    (b'{"prompt": 5}', 400),
    (b'{"prompt": "x", "constraints": {"grammar": "no-such-grammar"}}', 400),
    (b'{"prompt": "x", "constraints": {"grammar": "cefr", "grammar_params": {"names": "~"}}}', 400),
    (b'{"prompt": "x", "constraints": {"words": "/etc/passwd"}}', 400),
    (b'{"prompt": "x", "max_tokens": 1e400}', 400),
    (b'{"prompt": "x", "stop": [""]}', 400),
    (b'{"prompt": "x", "n": "2"}', 400),
    (b'{"prompt": "x", "eos_ids": [1e9]}', 400),
    (b'{"prompt": "x", "stream_options": {"include_usage": true}}', 400),
]


@pytest.mark.parametrize("body,status", HOSTILE)
def test_hostile_bodies_get_a_4xx_without_paths(guarded, body, status):
    r = httpx.post(guarded.url + "/v1/completions", content=body, headers={"content-type": "application/json"},
                   timeout=60)
    assert r.status_code == status, r.text
    err = r.json()["error"]
    assert err["message"]
    for root in (str(REPO), os.path.expanduser("~"), sys.prefix, "/etc/passwd"):
        assert root not in r.text, r.text


def test_posts_must_be_json(guarded):
    for path in ("/v1/constraints", "/v1/completions"):
        r = httpx.post(guarded.url + path, content=b'{"cefr": "A1"}', headers={"content-type": "text/plain"})
        assert r.status_code == 415 and r.json()["error"]["param"] == "content-type"


def test_log_lines_escape_client_text(guarded):
    r = httpx.post(guarded.url + "/v1/completions", json={"prompt": "the cat", "max_tokens": 2,
                                                           "user": "bob\n127.0.0.1 POST /v1/forged 200"})
    assert r.status_code == 200
    assert guarded.wait_log("user=bob\\n127.0.0.1")
    assert not any("POST /v1/forged" in ln and "user=" not in ln for ln in guarded.lines)


def test_artifact_store_evicts_and_deletes(guarded):
    ids = []
    for words in (["a", "cat"], ["a", "dog"], ["the", "mat"], ["the", "cat"]):
        r = httpx.post(guarded.url + "/v1/constraints", json={"words": words}, timeout=60)
        assert r.status_code == 200, r.text
        ids.append(r.json()["id"])
    use = lambda ident: httpx.post(guarded.url + "/v1/completions", timeout=60, json={  # noqa: E731
        "prompt": "the", "max_tokens": 2, "constraints": {"artifact": ident}}).status_code
    # --max-artifacts 3 with the start-up one: the two least recently used POSTed ones are gone
    assert [use(i) for i in ids] == [404, 404, 200, 200]
    assert httpx.delete(f"{guarded.url}/v1/constraints/{ids[3]}").status_code == 200
    assert use(ids[3]) == 404 and use(ids[2]) == 200
    assert httpx.delete(f"{guarded.url}/v1/constraints/{ids[3]}").status_code == 404
    assert httpx.delete(f"{guarded.url}/v1/constraints/animals").status_code == 403


def test_a_port_in_use_is_reported_before_the_model_loads(guarded, model_dir):
    port = guarded.url.rsplit(":", 1)[1]
    env = dict(os.environ, PYTHONPATH=f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    t0 = time.monotonic()
    p = subprocess.run([sys.executable, "-m", "fstbeam.cli", "serve", "--model", str(model_dir), "--port", port],
                       capture_output=True, text=True, timeout=120, env=env)
    assert p.returncode == 2 and f"port {port} on 127.0.0.1 is in use" in p.stderr, p.stderr
    assert "start: model" not in p.stderr and "Traceback" not in p.stderr
    assert time.monotonic() - t0 < 60
