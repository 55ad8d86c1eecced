"""The judging page in a real browser (Debian's Chromium driven by Playwright, nothing downloaded),
against the real server started as a user starts it (``rag-bench judge RUN_DIR``), killed with
SIGKILL mid-way and restarted."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from rag.judging.pool import PoolChunk, PoolQuestion, write_pool
from rag.judging.server import JudgingServer
from rag.judging.session import JudgingSession
from rag.judging.store import read_judgments

pytestmark = pytest.mark.slow


def browser_path() -> str:
    pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install -e '.[dev]')")
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        pytest.skip("no Chromium on this machine (apt-get install chromium); .ci/run installs it")
    return path


def start_server(run_dir: Path) -> tuple[subprocess.Popen, str]:
    """``rag-bench judge RUN_DIR`` in its own process; its printed address."""
    process = subprocess.Popen([sys.executable, "-m", "rag.cli", "judge", str(run_dir), "--judge", "ana"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = process.stdout.readline()
    match = re.search(r"open (http://127\.0\.0\.1:\d+/)", line)
    assert match, line + process.stderr.read()
    return process, match.group(1)


def shown_item(page) -> tuple[str, str, str]:
    return tuple(page.evaluate("document.body.dataset.item").split("\u0000"))


def test_judge_five_by_keyboard_kill_restart_and_resume_at_the_sixth(run_copy: Path) -> None:
    from playwright.sync_api import sync_playwright

    executable = browser_path()
    process, url = start_server(run_copy)
    judged: list[tuple[str, str, str]] = []
    try:
        with sync_playwright() as driver:
            browser = driver.chromium.launch(executable_path=executable, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            errors: list[str] = []
            page.on("pageerror", lambda error: errors.append(str(error)))
            requests: list[str] = []
            page.on("request", lambda request: requests.append(request.url))
            page.goto(url)
            page.wait_for_selector("body[data-ready='1']")
            for i, grade in enumerate("21030"):
                item = shown_item(page)
                assert item not in judged
                judged.append(item)
                page.keyboard.press(grade)  # wait on the item read before the key: the page may move on at once
                page.wait_for_function("(item) => document.body.dataset.item !== item", arg="\u0000".join(item))
                assert f"{i + 1} judged" in page.locator("#status").text_content()
            sixth = shown_item(page)
            # the page shows no method, rank or score: none of the methods' names is on it
            text = page.locator("main").text_content()
            assert "grade" in page.locator(".grades").text_content().lower() or "answers it" in text
            assert not any(re.search(rf"\b{m}\b", page.locator("#item-card").text_content() + page.locator("#passage")
                                     .text_content()) for m in ("dense", "bm25", "rrf", "convex"))
            assert all(r.startswith(url) for r in requests), requests  # nothing from the network
            assert not errors
            os.kill(process.pid, signal.SIGKILL)  # no goodbye: what is stored must already be on disk
            process.wait(timeout=10)
            stored = read_judgments(run_copy / "judgments.jsonl").judgments
            assert [(j.question_set, j.question_id, j.chunk_id) for j in stored] == judged
            assert [j.grade for j in stored] == [2, 1, 0, 3, 0] and {j.judge for j in stored} == {"ana"}
            process, url = start_server(run_copy)
            page.goto(url)
            page.wait_for_selector("body[data-ready='1']")
            assert shown_item(page) == sixth  # judging resumes where it stopped
            assert "5 judged" in page.locator("#status").text_content()
            page.keyboard.press("p")  # back to the fifth, its grade shown
            page.wait_for_function("(item) => document.body.dataset.item !== item", arg="\u0000".join(sixth))
            assert shown_item(page) == judged[-1]
            assert page.locator(".grades button.current").get_attribute("data-grade") == "0"
            page.keyboard.press("c")  # re-judged as can't tell: the latest line counts
            page.wait_for_function("(item) => document.body.dataset.item !== item", arg="\u0000".join(judged[-1]))
            browser.close()
    finally:
        process.kill()
        process.wait(timeout=10)
    read = read_judgments(run_copy / "judgments.jsonl")
    assert read.rejudged == 1 and read.judgments[-1].cant_tell and read.judgments[-1].grade is None


def test_a_passage_holding_markup_stays_text_and_the_page_loads_nothing_from_outside(tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    executable = browser_path()
    hostile = ('<script>window.pwned = 1</script><img src=x onerror="window.pwned = 2">'
               '<link rel=stylesheet href="https://example.com/x.css">{{ judge }}')
    question = PoolQuestion("mine", "q1", "What does <b>this</b> do?", {"a": ["c1"], "b": ["c2"]})
    chunks = {"c1": PoolChunk("c1", "page.html", "Intro <i>x</i>", hostile), "c2": PoolChunk("c2", "other.html", "", "plain")}
    write_pool(tmp_path / "pool.json", 10, "ndcg@10", 0, ["a", "b"], [question], chunks)
    server = JudgingServer(JudgingSession(tmp_path, "ana"))
    import threading

    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        html = httpx.get(server.url).text
        assert not re.search(r"""(src|href)\s*=\s*["']?https?://""", html)  # self-contained
        with sync_playwright() as driver:
            browser = driver.chromium.launch(executable_path=executable, args=["--no-sandbox"])
            page = browser.new_page()
            requests: list[str] = []
            page.on("request", lambda request: requests.append(request.url))
            page.goto(server.url)
            page.wait_for_selector("body[data-ready='1']")
            while shown_item(page)[2] != "c1":
                page.keyboard.press("s")
                time.sleep(0.2)
            assert page.locator("#passage").text_content() == hostile
            assert page.locator("#question").text_content() == "What does <b>this</b> do?"
            assert page.locator("#section").text_content() == "Intro <i>x</i>"
            assert page.evaluate("window.pwned") is None
            assert all(r.startswith(server.url) for r in requests), requests
            browser.close()
    finally:
        server.shutdown()
        server.server_close()


def test_the_server_answers_only_its_own_host_and_origin(tmp_path: Path) -> None:
    question = PoolQuestion("mine", "q1", "Why?", {"a": ["c1"]})
    write_pool(tmp_path / "pool.json", 10, "ndcg@10", 0, ["a"], [question], {"c1": PoolChunk("c1", "p", "", "text")})
    server = JudgingServer(JudgingSession(tmp_path, "ana"))
    import threading

    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        assert server.server_address[0] == "127.0.0.1"
        base = server.url
        assert httpx.get(base + "api/status").status_code == 200
        assert httpx.get(base + "api/status", headers={"Host": "attacker.example"}).status_code == 403  # DNS rebinding
        assert httpx.get(base + "api/status", headers={"Host": f"attacker.example:{server.port}"}).status_code == 403
        body = {"set": "mine", "qid": "q1", "chunk": "c1", "grade": 3}
        refused = httpx.post(base + "api/judge", json=body, headers={"Origin": "http://attacker.example"})
        assert refused.status_code == 403
        assert httpx.post(base + "api/judge", content=json.dumps(body),
                          headers={"Content-Type": "text/plain"}).status_code == 415  # no form post
        assert not (tmp_path / "judgments.jsonl").exists() or not (tmp_path / "judgments.jsonl").read_text()
        assert httpx.post(base + "api/judge", json={**body, "grade": 4}).status_code == 400
        assert httpx.post(base + "api/judge", json={**body, "grade": True}).status_code == 400
        assert httpx.post(base + "api/judge", json=body, headers={"Origin": base.rstrip("/")}).status_code == 200
        assert [j.grade for j in read_judgments(tmp_path / "judgments.jsonl").judgments] == [3]
        # not reachable on another address of this machine
        others = {info[4][0] for info in socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET)} - {"127.0.0.1"}
        for address in others:
            with pytest.raises(OSError):
                socket.create_connection((address, server.port), timeout=2).close()
    finally:
        server.shutdown()
        server.server_close()
