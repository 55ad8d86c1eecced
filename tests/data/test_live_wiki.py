"""Live Wikipedia builder against a local HTTP server (127.0.0.1) serving recorded API responses."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import pytest

from rag.data import load_dataset
from rag.data.live_wiki import LiveWikiConfig, build_live_corpus, titles_from_urls
from rag.errors import BenchError

# Recorded MediaWiki responses (formatversion=2), trimmed to the fields the builder reads.
PAGES = {
    "Game theory": {"batchcomplete": True, "query": {"pages": [{
        "pageid": 11924, "ns": 0, "title": "Game theory", "extract": "Game theory is the study of mathematical models.",
        "revisions": [{"revid": 1234567890, "parentid": 1234567000}],
        "fullurl": "https://en.wikipedia.org/wiki/Game_theory"}]}},
    "Newton's laws": {"batchcomplete": True, "query": {
        "redirects": [{"from": "Newton's laws", "to": "Newton's laws of motion"}],
        "pages": [{"pageid": 55212, "ns": 0, "title": "Newton's laws of motion",
                   "extract": "Newton's laws of motion are three physical laws.", "revisions": [{"revid": 1111}]}]}},
    "Schrödinger's cat": {"batchcomplete": True, "query": {"pages": [{
        "pageid": 28176, "ns": 0, "title": "Schrödinger's cat", "extract": "Schrödinger's cat is a thought experiment.",
        "revisions": [{"revid": 2222}]}]}},
    "No such page xyz": {"batchcomplete": True, "query": {"pages": [{"ns": 0, "title": "No such page xyz", "missing": True}]}},
    "Rank of a group": {"batchcomplete": True, "query": {"pages": [{
        "pageid": 3, "ns": 0, "title": "Rank of a group", "extract": "In group theory, the rank of a group is small.",
        "revisions": [{"revid": 3333}]}]}},
}
RANDOM = {"batchcomplete": True, "continue": {"rncontinue": "0.1|0.2|0|0"},
          "query": {"random": [{"id": 3, "ns": 0, "title": "Rank of a group"}, {"id": 11924, "ns": 0, "title": "Game theory"}]}}


class RecordedWiki(BaseHTTPRequestHandler):
    requests: list = []
    fail_next: list = []

    def do_GET(self):
        params = {k: v[0] for k, v in parse_qs(urlsplit(self.path).query).items()}
        type(self).requests.append(params)
        if type(self).fail_next:
            self.send_response(type(self).fail_next.pop(0))
            self.end_headers()
            return
        assert params["format"] == "json" and params["formatversion"] == "2" and params["action"] == "query"
        if params.get("list") == "random":
            body = RANDOM
        else:
            assert params["prop"] == "extracts|revisions|info" and params["explaintext"] == "1" and params["redirects"] == "1"
            body = PAGES.get(params["titles"], {"error": {"code": "badtitle", "info": "Bad title"}})
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    RecordedWiki.requests, RecordedWiki.fail_next = [], []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), RecordedWiki)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/w/api.php"
    httpd.shutdown()
    httpd.server_close()


def config(api_url):
    return LiveWikiConfig(api_url=api_url, min_interval_s=0, backoff_s=0)


def test_build_caches_and_rebuilds_identically(server, tmp_path):
    titles = titles_from_urls(["https://en.wikipedia.org/wiki/Game_theory", "https://en.wikipedia.org/wiki/Newton%27s_laws",
                               "https://en.wikipedia.org/wiki/Schr%C3%B6dinger%27s_cat",
                               "https://en.wikipedia.org/wiki/No_such_page_xyz"])
    out = tmp_path / "out" / "corpus.jsonl"
    result = build_live_corpus(titles, 2, tmp_path / "cache", out, config(server), progress=False)
    # random titles: "Rank of a group" is new, "Game theory" duplicates a fixed page and is kept once
    assert [d.title for d in result.documents] == ["Game theory", "Newton's laws of motion", "Schrödinger's cat", "Rank of a group"]
    assert result.missing == ["No such page xyz"]
    assert [d.metadata["revision_id"] for d in result.documents] == [1234567890, 1111, 2222, 3333]
    assert result.documents[1].url == "https://en.wikipedia.org/wiki/Newton%27s_laws_of_motion"
    assert result.requests_made == 1 + 4 + 1  # random list, four fixed pages, one new random page (one is cached)
    manifest = json.loads((tmp_path / "out" / "corpus.jsonl.manifest.json").read_text())
    assert manifest["random_titles"] == ["Rank of a group", "Game theory"]
    assert manifest["revisions"]["https://en.wikipedia.org/wiki/Game_theory"] == 1234567890
    first_bytes = out.read_bytes()

    RecordedWiki.requests.clear()
    again = build_live_corpus(titles, 2, tmp_path / "cache", out, config("http://127.0.0.1:9/unreachable"), progress=False)
    assert again.requests_made == 0 and out.read_bytes() == first_bytes and RecordedWiki.requests == []

    dataset = load_dataset({"format": "jsonl", "corpus": str(out),
                            "questions": str(write_question(tmp_path, "https://en.wikipedia.org/wiki/Game_theory"))})
    assert dataset.documents[0].metadata["revision_id"] == 1234567890


def write_question(tmp_path, url):
    path = tmp_path / "q.jsonl"
    path.write_text(json.dumps({"id": "q", "question": "What is game theory?", "gold_urls": [url]}) + "\n")
    return path


def test_retries_on_server_errors(server, tmp_path):
    RecordedWiki.fail_next = [503, 429]
    result = build_live_corpus(["Game theory"], 0, tmp_path / "cache", tmp_path / "c.jsonl", config(server), progress=False)
    assert [d.title for d in result.documents] == ["Game theory"] and result.requests_made == 3


def test_gives_up_after_max_attempts_and_reports_api_errors(server, tmp_path):
    RecordedWiki.fail_next = [500, 500]
    cfg = LiveWikiConfig(api_url=server, min_interval_s=0, backoff_s=0, max_attempts=2)
    with pytest.raises(Exception, match="HTTP 500"):
        build_live_corpus(["Game theory"], 0, tmp_path / "cache", tmp_path / "c.jsonl", cfg, progress=False)
    with pytest.raises(BenchError, match="badtitle"):
        build_live_corpus(["Unknown title"], 0, tmp_path / "cache", tmp_path / "c.jsonl", config(server), progress=False)
