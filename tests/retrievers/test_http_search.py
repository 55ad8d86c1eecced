"""The ``http`` method (issue 51) against small real servers the tests start on 127.0.0.1: answers by
chunk id or by page, the key sent from its variable and redacted, retries after 429 with
Retry-After, a failing endpoint's questions failed stages (never another ranking), malformed answers,
the answer cap, a server that does not answer (one line, exit 2), and the docs' example server."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest
import yaml

from rag.errors import BenchError
from rag.generation.local_server import free_port
from rag.retrievers import build_retriever
from rag.types import Chunk

REPO = Path(__file__).resolve().parents[2]
KEY_ENV = "RAG_BENCH_TEST_SEARCH_KEY"
KEY = "search-key-0123456789abcdef"
CHUNKS = [Chunk(f"{page}#{i}", page, f"{page}.md", text, i, 3) for page, texts in
          (("lava", ["Volcanoes let lava escape", "Ash clouds follow eruptions"]),
           ("birds", ["Penguins are birds that cannot fly", "Birds of the south"]))
          for i, text in enumerate(texts)]

Answer = Callable[[dict], tuple[int, dict | str, dict]]  # request body -> status, body, headers


def overlap(body: dict) -> tuple[int, dict, dict]:
    """A tiny search: chunks ranked by the words they share with the query."""
    words = set(re.findall(r"\w+", body["query"].lower()))
    scored = [{"id": c.chunk_id, "score": len(words & set(re.findall(r"\w+", c.text.lower())))} for c in CHUNKS]
    return 200, {"results": [r for r in scored if r["score"]][: body["k"]]}, {}


@pytest.fixture
def server() -> Iterator[Callable[[Answer], tuple[str, list]]]:
    """``server(answer)``: a server on 127.0.0.1 answering each POST with ``answer(body)``; its URL and
    the requests it received (body and Authorization header)."""
    started = []

    def start(answer: Answer) -> tuple[str, list]:
        seen: list[tuple[dict, str | None]] = []

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                seen.append((body, self.headers.get("Authorization")))
                status, reply, headers = answer(body)
                data = (reply if isinstance(reply, str) else json.dumps(reply)).encode()
                self.send_response(status)
                for name, value in {"Content-Type": "application/json", **headers}.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args) -> None:
                pass

        httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        started.append(httpd)
        return f"http://127.0.0.1:{httpd.server_address[1]}/search", seen

    yield start
    for httpd in started:
        httpd.shutdown()
        httpd.server_close()


def retriever(url: str, **params):
    found = build_retriever("prod", "http", {"base_url": url, "api_key_env": KEY_ENV, "max_retries": 2,
                                             "backoff": {"initial_s": 0.01, "max_s": 0.05}, **params})
    found.index(CHUNKS, None)
    return found


@pytest.fixture(autouse=True)
def key(monkeypatch) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)


def test_http_answers_by_id_or_page_in_the_tie_rules_order(server) -> None:
    url, seen = server(overlap)
    first, second, none = retriever(url).search(["lava escape", "birds that fly", "nothing here"], 10)
    assert first.chunk_ids == ["lava#0"] and first.scores == [2.0] and not first.failed
    assert second.chunk_ids == ["birds#0", "birds#1"] and none.chunk_ids == []
    assert seen[0] == ({"query": "preflight", "k": 1}, f"Bearer {KEY}")
    assert seen[1][0] == {"query": "lava escape", "k": 10}
    pages, _ = server(lambda body: (200, {"results": [{"url": "lava.md", "score": 1}, {"url": "birds.md", "score": 1},
                                                       {"id": "lava#1", "score": 0.5}]}, {}))
    ranking = retriever(pages).search(["q"], 2)[0]
    assert ranking.chunk_ids == ["lava#0", "birds#0"]  # each page its first passage; a tie: chunk id descending


def test_http_retries_after_429_with_retry_after(server) -> None:
    calls = []

    def busy_once(body: dict):
        calls.append(body["query"])
        if body["query"] == "lava" and calls.count("lava") == 1:
            return 429, {"error": "busy"}, {"Retry-After": "0"}
        return overlap(body)

    url, _ = server(busy_once)
    assert retriever(url).search(["lava"], 5)[0].chunk_ids == ["lava#0"]
    assert calls.count("lava") == 2


@pytest.mark.parametrize(("reply", "said", "attempts"), [
    ((500, {"error": f"down, key {KEY}"}, {}), "server_error: HTTPStatusError: HTTP 500", 3),
    ((200, {"results": [{"id": "nope#0", "score": 1}]}, {}), "unknown_result: 'nope#0' is no chunk id", 1),
    ((200, {"results": [{"url": "lava.md", "score": 1}, {"id": "lava#0", "score": 2}]}, {}), "given twice", 1),
    ((200, {"results": [{"id": "lava#0", "score": "high"}]}, {}), "malformed_response: a result is not", 3),
    ((200, {"hits": []}, {}), "malformed_response: the answer has no 'results' list", 3),
    ((200, "not json", {}), "malformed_response", 3),
    ((200, {"results": [{"id": "lava#0", "score": 1, "pad": "x" * (2**20 + 4096)}]}, {}), "response_too_large", 1),
])
def test_http_a_failing_answer_is_a_failed_stage(server, reply, said: str, attempts: int) -> None:
    url, seen = server(lambda body: overlap(body) if body["query"] != "broken" else reply)
    good, bad = retriever(url).search(["lava escape", "broken"], 1)
    assert good.chunk_ids == ["lava#0"] and not good.failed
    assert bad.chunk_ids == [] and said in bad.failed and f"gave up after {attempts} attempt(s)" in bad.failed
    assert KEY not in bad.failed
    assert sum(body["query"] == "broken" for body, _ in seen) == attempts


def test_http_preflight_and_keys(server, monkeypatch) -> None:
    with pytest.raises(BenchError, match="does not answer"):
        retriever(f"http://127.0.0.1:{free_port()}/search").search(["q"], 5)
    url, _ = server(lambda body: (401, {"error": "who?"}, {}))
    with pytest.raises(BenchError, match=f"refused the key in {KEY_ENV}"):
        retriever(url).search(["q"], 5)
    monkeypatch.delenv(KEY_ENV)
    with pytest.raises(BenchError, match=f"{KEY_ENV} is not set"):
        build_retriever("prod", "http", {"base_url": "https://search.example.org/q", "api_key_env": KEY_ENV})


def smoke_config(tmp_path: Path, url: str) -> Path:
    from tests.runner.conftest import SMOKE_CONFIG

    config = yaml.safe_load(SMOKE_CONFIG.read_text())
    config["dataset"] = {key: str((SMOKE_CONFIG.resolve().parent / value).resolve()) if key != "format" else value
                         for key, value in config["dataset"].items()}
    config["retrievers"] = [config["retrievers"][1], {"name": "prod", "type": "http", "params": {
        "base_url": url, "api_key_env": KEY_ENV, "max_retries": 1, "backoff": {"initial_s": 0.01}}}]
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    return tmp_path / "config.yaml"


def test_http_in_a_run_a_failing_endpoint_is_a_failed_stage_and_the_key_is_never_written(server, tmp_path) -> None:
    from rag.cli import main

    def bm25_like(body: dict):  # words shared with the chunk text, over the smoke chunks; fails on one question
        if "Syria" in body["query"]:
            return 503, {"error": f"unavailable for {KEY}"}, {}
        words = set(re.findall(r"\w+", body["query"].lower()))
        scored = sorted(((len(words & set(re.findall(r"\w+", text.lower()))), cid) for cid, text in smoke_texts.items()),
                        reverse=True)
        return 200, {"results": [{"id": cid, "score": s} for s, cid in scored[: body["k"]] if s]}, {}

    from rag.chunking import ChunkingConfig, chunk_documents
    from rag.data.loaders import load_dataset

    data = REPO / "data" / "smoke"
    documents = load_dataset({"format": "jsonl", "corpus": data / "corpus.jsonl", "questions": data / "questions.jsonl"})
    smoke_texts = {c.chunk_id: c.text for c in chunk_documents(documents.documents, ChunkingConfig(max_tokens=128,
                                                                                                   overlap_tokens=16),
                                                               progress=False)}
    url, _ = server(bm25_like)
    config = smoke_config(tmp_path, url)
    assert main(["run", "--config", str(config), "--no-generation", "--quiet", "--output-dir", str(tmp_path / "run"),
                 "--set", f"cache_dir={tmp_path / 'cache'}"]) == 0
    run = tmp_path / "run"
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["status"] == "partial" and "prod" in json.dumps(manifest["stages"])
    per_query = (run / "per_query.csv").read_text()
    assert "server_error" in per_query
    for path in run.rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path
    healthy, _ = server(lambda body: bm25_like({**body, "query": body["query"].replace("Syria", "")}))
    assert main(["run", "--config", str(smoke_config(tmp_path, healthy)), "--no-generation", "--quiet", "--output-dir",
                 str(tmp_path / "healthy"), "--set", f"cache_dir={tmp_path / 'cache2'}"]) == 0
    rows = {row["method"]: row for row in json.loads((tmp_path / "healthy" / "comparison.json").read_text())["rows"]}
    assert rows["prod"]["retrieval_ms_per_query"] > 0 and 0 < rows["prod"]["ndcg@10"] <= 1


def test_http_a_server_that_does_not_answer_is_one_line_and_exit_2(tmp_path, capsys) -> None:
    from rag.cli import main

    config = smoke_config(tmp_path, f"http://127.0.0.1:{free_port()}/search")
    code = main(["run", "--config", str(config), "--no-generation", "--quiet", "--output-dir", str(tmp_path / "run"),
                 "--set", f"cache_dir={tmp_path / 'cache'}"])
    err = capsys.readouterr().err
    assert code == 2 and "retrievers.prod.params.base_url" in err and "does not answer" in err and "Traceback" not in err


def test_the_docs_example_server_is_a_search_endpoint(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "lava.md").write_text("Volcanoes let lava escape")
    (folder / "birds.md").write_text("Penguins are birds that cannot fly")
    port = free_port()
    process = subprocess.Popen([sys.executable, str(REPO / "scripts" / "example_search_server.py"), str(folder), str(port)])
    try:
        url = f"http://127.0.0.1:{port}/search"
        for _ in range(100):
            try:
                httpx.post(url, json={"query": "x", "k": 1}, timeout=1)
                break
            except httpx.TransportError:
                time.sleep(0.05)
        chunks = [Chunk("lava.md#0", "lava.md", "lava.md", "Volcanoes let lava escape", 0, 4),
                  Chunk("birds.md#0", "birds.md", "birds.md", "Penguins are birds that cannot fly", 0, 6)]
        found = build_retriever("mine", "http", {"base_url": url})
        found.index(chunks, None)
        assert found.search(["Which birds cannot fly?"], 10)[0].chunk_ids == ["birds.md#0"]
    finally:
        process.terminate()
        process.wait(timeout=10)
