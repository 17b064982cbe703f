"""The embedders against real backends: the packaged all-MiniLM-L6-v2 model loaded from disk, and
a small OpenAI-compatible server on loopback (a fake at our own protocol boundary; httpx is real)."""

from __future__ import annotations

import hashlib
import json
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from portal.adapters.embedder_base import EmbedderError
from portal.adapters.embedders import LocalEmbedder, build_embedder
from portal.adapters.openai_embedder import OpenAIEmbedder
from portal.domain.options import Embedder

PRIVATE = "my neighbour Jana's diagnosis is private"

# --- local model ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def local() -> LocalEmbedder:
    return LocalEmbedder()


@pytest.mark.slow
def test_local_model_is_not_loaded_until_needed(local):
    fresh = LocalEmbedder()
    assert isinstance(fresh, Embedder)
    assert fresh.model_id == "all-MiniLM-L6-v2"
    vectors, model_id = fresh.embed([])
    assert vectors.shape == (0, 384)
    assert model_id == "all-MiniLM-L6-v2"
    assert not fresh.loaded


@pytest.mark.slow
def test_local_model_gives_384_dim_unit_vectors(local):
    texts = ["I like tea", "The car broke down", "Wir gehen morgen wandern"]
    vectors, model_id = local.embed(texts)

    assert local.loaded
    assert model_id == "all-MiniLM-L6-v2"
    assert vectors.dtype == np.float32
    assert vectors.shape == (3, 384)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert local.dimension() == 384


@pytest.mark.slow
def test_local_model_puts_similar_meanings_closer(local):
    (tea, enjoy_tea, car), _ = local.embed(["I like tea", "I enjoy drinking tea", "The car broke down"])
    assert float(tea @ enjoy_tea) > float(tea @ car) + 0.2


@pytest.mark.slow
def test_local_query_and_document_agree_for_minilm(local):
    # all-MiniLM uses no prefixes, so a query finds the identical document exactly.
    (as_query,), _ = local.embed(["I like tea"], purpose="query")
    (as_doc,), _ = local.embed(["I like tea"], purpose="document")
    np.testing.assert_allclose(as_query, as_doc, atol=1e-5)


@pytest.mark.slow
def test_local_model_batches_and_keeps_order(local):
    small = LocalEmbedder(batch_size=2)
    texts = [f"memory number {i}" for i in range(5)]
    batched, _ = small.embed(texts)
    together, _ = local.embed(texts)
    np.testing.assert_allclose(batched, together, atol=1e-5)


@pytest.mark.slow
def test_local_model_is_safe_to_share_between_threads(local):
    texts = ["I like tea", "The car broke down"]
    expected, _ = local.embed(texts)
    shared = LocalEmbedder()
    results: list[np.ndarray] = []
    errors: list[BaseException] = []

    def work() -> None:
        try:
            results.append(shared.embed(texts)[0])
        except BaseException as exc:  # surfaced below; a thread cannot fail the test itself
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert len(results) == 4
    for got in results:
        np.testing.assert_allclose(got, expected, atol=1e-5)


def test_embedding_a_bare_string_is_refused():
    with pytest.raises(TypeError):
        LocalEmbedder().embed("I like tea")  # type: ignore[arg-type]


def test_unknown_purpose_is_refused():
    with pytest.raises(ValueError, match="purpose"):
        LocalEmbedder().embed(["I like tea"], purpose="summary")


def test_custom_model_path_names_the_model(tmp_path):
    path = tmp_path / "my-model"
    path.mkdir()
    embedder = LocalEmbedder(model_path=path)
    assert embedder.model_id == "my-model"
    with pytest.raises(EmbedderError, match="my-model") as caught:
        embedder.embed(["I like tea"])
    assert "I like tea" not in str(caught.value)


# --- fake OpenAI-compatible server ---------------------------------------------------------------


def vector_for(text: str, dim: int = 8) -> list[float]:
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return [b / 255.0 for b in digest[:dim]]


@dataclass
class FakeServer:
    url: str
    requests: list[dict] = field(default_factory=list)
    flaky_failures_left: int = 1


@pytest.fixture
def server() -> Iterator[FakeServer]:
    state = FakeServer(url="")

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):  # keep test output quiet
            pass

        def _send(self, status: int, payload: dict) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            state.requests.append({"path": self.path, "body": body, "auth": self.headers.get("Authorization")})
            inputs = body["input"]
            if self.path == "/down/v1/embeddings":
                # Echo the input, as some servers do, to prove the client never quotes the body.
                return self._send(500, {"error": f"cannot embed {inputs}"})
            if self.path == "/flaky/v1/embeddings" and state.flaky_failures_left:
                state.flaky_failures_left -= 1
                return self._send(500, {"error": "try again"})
            if self.path == "/limited/v1/embeddings" and state.flaky_failures_left:
                state.flaky_failures_left -= 1
                return self._send(429, {"error": "slow down"})
            if self.path == "/bad/v1/embeddings":
                return self._send(400, {"error": f"bad input {inputs}"})
            if self.path == "/trickle/v1/embeddings":
                # A whole answer, one byte every 0.3 s: each wait is short, the whole is not.
                data = json.dumps({"data": [{"index": 0, "embedding": [0.1, 0.2, 0.3]}]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                for i in range(len(data)):
                    try:
                        self.wfile.write(data[i : i + 1])
                        self.wfile.flush()
                    except OSError:
                        return None
                    time.sleep(0.3)
                return None
            if self.path == "/slow/v1/embeddings":
                time.sleep(1.5)  # past the client's time; the answer finds nobody waiting
                try:
                    return self._send(500, {"error": "too late"})
                except (BrokenPipeError, ConnectionResetError):
                    return None
            if not self.path.endswith("/v1/embeddings"):
                return self._send(404, {"error": "not found"})
            dim = body.get("dimensions", 8)
            data = [{"object": "embedding", "index": i, "embedding": vector_for(t, dim)} for i, t in enumerate(inputs)]
            data.reverse()  # out of order on purpose: the client must sort by index
            return self._send(200, {"object": "list", "model": body["model"], "data": data})

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


def test_openai_embedder_answers_in_input_order(server):
    texts = ["I like tea", "The car broke down", "Wir gehen morgen wandern"]
    with OpenAIEmbedder(f"{server.url}/v1/", model="fake-embed", api_key="sk-test") as embedder:
        assert isinstance(embedder, Embedder)
        vectors, model_id = embedder.embed(texts, purpose="query")

    assert model_id == "fake-embed"
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(vectors, np.array([vector_for(t) for t in texts], dtype=np.float32))
    (request,) = server.requests
    assert request["path"] == "/v1/embeddings"
    assert request["body"] == {"model": "fake-embed", "input": texts}
    assert request["auth"] == "Bearer sk-test"


def test_openai_embedder_batches_and_passes_dimensions(server):
    texts = [f"memory {i}" for i in range(5)]
    with OpenAIEmbedder(f"{server.url}/v1", model="fake-embed", batch_size=2, dimensions=4) as embedder:
        vectors, _ = embedder.embed(texts)
        empty, _ = embedder.embed([])

    assert [len(r["body"]["input"]) for r in server.requests] == [2, 2, 1]
    assert all(r["body"]["dimensions"] == 4 for r in server.requests)
    assert all(r["auth"] is None for r in server.requests)
    np.testing.assert_allclose(vectors, np.array([vector_for(t, 4) for t in texts], dtype=np.float32))
    assert empty.shape == (0, 4)
    assert len(server.requests) == 3  # the empty call asked nothing


@pytest.mark.parametrize("path", ["flaky", "limited"])
def test_openai_embedder_retries_a_transient_failure(server, path):
    with OpenAIEmbedder(f"{server.url}/{path}/v1", model="fake-embed", retries=2, backoff=0.01) as embedder:
        vectors, _ = embedder.embed(["I like tea"])

    assert len(server.requests) == 2
    np.testing.assert_allclose(vectors[0], np.array(vector_for("I like tea"), dtype=np.float32))


def test_openai_embedder_gives_up_without_quoting_the_text(server):
    with (
        OpenAIEmbedder(f"{server.url}/down/v1", model="fake-embed", retries=2, backoff=0.01) as embedder,
        pytest.raises(EmbedderError) as caught,
    ):
        embedder.embed([PRIVATE])

    assert len(server.requests) == 3  # one try and two retries, then it stops
    message = str(caught.value)
    assert "HTTP 500" in message
    assert "Jana" not in message and PRIVATE not in message


def test_openai_embedder_does_not_retry_a_client_error(server):
    with (
        OpenAIEmbedder(f"{server.url}/bad/v1", model="fake-embed", backoff=0.01) as embedder,
        pytest.raises(EmbedderError, match="HTTP 400") as caught,
    ):
        embedder.embed([PRIVATE])
    assert len(server.requests) == 1
    assert "Jana" not in str(caught.value)


def test_openai_embedder_gives_up_on_a_hanging_server_within_its_timeout_retries_included(server):
    started = time.monotonic()
    with (
        OpenAIEmbedder(f"{server.url}/slow/v1", model="fake-embed", timeout=0.6, retries=5, backoff=0.01) as embedder,
        pytest.raises(EmbedderError, match="within 0.6 s") as caught,
    ):
        embedder.embed([PRIVATE])
    assert time.monotonic() - started < 2.5  # not 6 tries of 0.6 s (3.6 s at the least)
    assert len(server.requests) == 1
    assert "Jana" not in str(caught.value)
    with pytest.raises(ValueError, match="timeout"):
        OpenAIEmbedder(f"{server.url}/v1", model="fake-embed", timeout=0)


def test_openai_embedder_gives_up_on_a_slow_steady_answer_within_its_timeout(server):
    started = time.monotonic()
    with (
        OpenAIEmbedder(f"{server.url}/trickle/v1", model="fake-embed", timeout=1.0, retries=0) as embedder,
        pytest.raises(EmbedderError, match="TimeoutError"),
    ):
        embedder.embed([PRIVATE])
    assert time.monotonic() - started < 2.0  # the answer alone would take 20 s


def test_openai_embedder_reports_an_unreachable_server():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    # The port is free again: nothing listens there.
    with (
        OpenAIEmbedder(f"http://127.0.0.1:{port}/v1", model="fake-embed", retries=1, backoff=0.01) as embedder,
        pytest.raises(EmbedderError, match="ConnectError") as caught,
    ):
        embedder.embed([PRIVATE])
    assert "Jana" not in str(caught.value)


# --- configuration -------------------------------------------------------------------------------


def test_build_embedder_none_local_and_openai(server):
    assert build_embedder("none", None, None, None) is None
    local = build_embedder(" Local ", None, None, None)
    assert isinstance(local, LocalEmbedder) and not local.loaded
    remote = build_embedder("openai", "fake-embed", f"{server.url}/v1", None)
    assert isinstance(remote, OpenAIEmbedder)
    assert remote.embed(["I like tea"])[1] == "fake-embed"
    remote.close()


@pytest.mark.parametrize(
    ("kind", "model", "base_url", "names"),
    [
        ("magic", None, None, "MEMORY_EMBEDDER"),
        ("", None, None, "MEMORY_EMBEDDER"),
        ("openai", "fake-embed", None, "MEMORY_EMBEDDING_BASE_URL"),
        ("openai", "fake-embed", "localhost:9000/v1", "MEMORY_EMBEDDING_BASE_URL"),
        ("openai", None, "http://127.0.0.1:9/v1", "MEMORY_EMBEDDING_MODEL"),
    ],
)
def test_build_embedder_names_the_variable_to_fix(kind, model, base_url, names):
    with pytest.raises(ValueError, match=names):
        build_embedder(kind, model, base_url, "sk-secret")


def test_the_embedding_timeout_is_configured_and_checked(server, tmp_path):
    from portal.bootstrap import build_runtime
    from portal.config import ConfigError, load_config

    env = {"MEMORY_INSTANCE_PATH": str(tmp_path), "MEMORY_EMBEDDER": "openai", "MEMORY_EMBEDDING_MODEL": "fake-embed",
           "MEMORY_EMBEDDING_BASE_URL": f"{server.url}/v1"}
    assert load_config(env).embedding_timeout == 10
    runtime = build_runtime(load_config({**env, "MEMORY_EMBEDDING_TIMEOUT": "3"}))
    assert isinstance(runtime.service.embedder, OpenAIEmbedder) and runtime.service.embedder.timeout == 3
    for bad in ("0", "soon"):
        with pytest.raises(ConfigError, match="MEMORY_EMBEDDING_TIMEOUT"):
            load_config({**env, "MEMORY_EMBEDDING_TIMEOUT": bad})
