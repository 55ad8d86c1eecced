"""A small OpenAI-compatible server on 127.0.0.1 (chat completions, embeddings, rerank) for fault injection.

Chat completions are not a model: an answer is ``"stand-in answer <first 16 hex of sha256(last user
message)>"`` so a test can tell which request an answer belongs to. ``POST /v1/embeddings`` computes
real embeddings with a local sentence-transformers model (``embedding_model``, default the packaged
all-MiniLM-L6-v2, loaded on the first request; one batch at a time, each request's inputs encoded as
one batch), as ``float`` lists or ``base64`` float32 (the ``openai`` client's default).
``POST /v1/rerank`` (the Jina/Cohere shape: ``{model, query, documents, top_n}`` ->
``{results: [{index, relevance_score}], usage: {total_tokens}}``, best first) scores each document by
:func:`overlap_score`: the share of the query's distinct words it contains. Faults are injected two
ways (for embeddings the marker goes in the first input text, for rerank in the query):

* per request, by a marker in the prompt: ``[[faults:error_500,rate_limit_429,ok]]`` makes the first
  attempt of that prompt fail with a 500, the second with a 429, the third and later succeed (the
  last entry repeats). Deterministic whatever the client's concurrency.
* at random with seeded rates (``error_rate`` -> 500, ``timeout_rate`` -> a response delayed by
  ``slow_s``), for load tests.

A scripted reply: ``[[reply:"Question: Who?\\nAnswer: x"]]`` in the prompt (a JSON string literal)
makes that text the answer instead of the hash form, for testing how replies are parsed. Scripted
values written raw into the answer's JSON, so a test can send what no JSON encoder writes (NaN,
Infinity, an integer of 400 digits): ``[[logprobs:[{"token": "yes", "logprob": NaN}]:logprobs]]``
in a chat prompt is the first answer token's ``top_logprobs`` list (none without it);
``[[results:[{"index": 0, "relevance_score": 1e39}]:results]]`` in a rerank query is the answer's
``results``; ``[[pad:N]]`` adds N characters to the answer (a chat reply's text, a rerank answer's
``pad`` field), for testing size caps.

Fault kinds (:data:`FAULTS`): ``ok``, ``error_500``, ``error_503``, ``rate_limit_429`` (with
``Retry-After``), ``malformed_json``, ``empty_choices``, ``empty_content``, ``slow`` (answers after
``slow_s``), ``drop_connection`` (closes the socket without a response), ``bad_request_400``,
``echo_auth_500`` (a 500 whose body echoes the Authorization header, to test secret redaction),
``echo_auth_text`` (the same as a plain-text 500 body) and ``echo_auth_item`` (a 200 answer whose one
rerank result and chat choice carry the header where the index and the content belong); in these three
the header comes after ``echo_pad`` filler characters (``.``), so a test can place it across a length
limit of the client. ``fault`` is the fault of every request without a marker (the preflight's too),
instead of the random draw.
With ``echo_auth`` set, every normal answer ends with the request's Authorization header (a server
that leaks the key into a 200 answer). With ``crash_on_completion`` N > 0 the server's process kills
itself with ``SIGSEGV`` on its N-th chat completion request, before answering (a native crash of the
server, as llama.cpp's; :mod:`rag.testing.llama_stand_in` runs it in the managed server's place).
:meth:`StandInServer.hold_completions` holds chat completion requests after a given number until
:meth:`StandInServer.release`, so a test can act (a Ctrl-C) at a known point of a run instead of racing it.

Run it in-process (``with StandInServer(...) as server: server.base_url``) or as a process
(``with StandInProcess("--latency", "0.2") as proc: proc.base_url``; the command line
``python -m rag.testing --port 0 --latency 0.2`` prints ``LISTENING <port>``, and its
counters as ``STATS {json}`` on Ctrl-C).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np

FAULTS = (
    "ok", "error_500", "error_503", "rate_limit_429", "malformed_json", "empty_choices",
    "empty_content", "slow", "drop_connection", "bad_request_400", "echo_auth_500", "echo_auth_text", "echo_auth_item",
)
FAULT_MARKER = re.compile(r"\[\[faults:([a-z0-9_,]+)\]\]")
REPLY_MARKER = re.compile(r'\[\[reply:("(?:[^"\\]|\\.)*")\]\]')
LOGPROBS_MARKER = re.compile(r"\[\[logprobs:(.*?):logprobs\]\]", re.S)
RESULTS_MARKER = re.compile(r"\[\[results:(.*?):results\]\]", re.S)
PAD_MARKER = re.compile(r"\[\[pad:(\d+)\]\]")
_RAW = "__stand_in_raw__"


def with_raw(payload: dict, raw: str | None) -> bytes:
    """``payload`` as JSON with the string :data:`_RAW` replaced by the raw JSON text ``raw``."""
    body = json.dumps(payload)
    return (body.replace(json.dumps(_RAW), raw, 1) if raw is not None else body).encode()


@dataclass
class StandInSettings:
    latency_s: float = 0.0
    slow_s: float = 5.0
    retry_after: str = "0"
    error_rate: float = 0.0
    timeout_rate: float = 0.0
    seed: int = 0
    model: str = "stand-in"
    echo_auth: bool = False
    crash_on_completion: int = 0
    fault: str = ""
    echo_pad: int = 0
    embedding_model: str = "all-MiniLM-L6-v2"
    rerank_results: str = ""  # raw JSON results of every rerank answer without a results marker (the preflight's too)


@dataclass
class StandInStats:
    """What the server saw; read it while holding nothing (counters only, so memory stays flat)."""

    requests: int = 0
    completions_requests: int = 0
    embedding_requests: int = 0
    rerank_requests: int = 0
    texts_embedded: int = 0
    faults: Counter = field(default_factory=Counter)
    attempts_by_prompt: Counter = field(default_factory=Counter)


WORD = re.compile(r"\w+")


def overlap_score(query: str, document: str) -> float:
    """The stand-in's relevance score: the share of the query's distinct lower-cased words (``\\w+``)
    that the document contains (0 for a query without words)."""
    words = set(WORD.findall(query.lower()))
    return len(words & set(WORD.findall(document.lower()))) / len(words) if words else 0.0


def faults_for_prompt(text: str, attempt: int) -> str | None:
    """The scripted fault for the ``attempt``-th (1-based) request carrying a fault marker."""
    match = FAULT_MARKER.search(text)
    if match is None:
        return None
    plan = match.group(1).split(",")
    return plan[min(attempt, len(plan)) - 1]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # headers and body go out in two small writes: with Nagle's algorithm the second waited ~43 ms for the
    # client's delayed ACK on every kept-alive request (0.7 ms without)
    disable_nagle_algorithm = True
    server: "_Server"

    def log_message(self, format, *args):  # noqa: A002 - silence the default stderr access log
        pass

    def _send_json(self, status: int, payload, headers: dict[str, str] | None = None) -> None:
        body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):  # noqa: N802
        self.server.owner.count_request()
        if self.path.rstrip("/").endswith("/models"):
            model = self.server.owner.settings.model
            self._send_json(200, {"object": "list", "data": [{"id": model, "object": "model"}]})
        else:
            self._send_json(404, {"error": {"message": "not found"}})

    def do_POST(self):  # noqa: N802
        owner = self.server.owner
        owner.count_request()
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if self.path.rstrip("/").endswith("/embeddings"):
            self._embeddings(json.loads(body))
            return
        if self.path.rstrip("/").endswith("/rerank"):
            self._rerank(json.loads(body))
            return
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._send_json(404, {"error": {"message": "not found"}})
            return
        request = json.loads(body)
        user_text = next((m["content"] for m in reversed(request["messages"]) if m["role"] == "user"), "")
        fault = owner.choose_fault(user_text)
        owner.pass_gate()  # after the request is counted
        if owner.stats.completions_requests == owner.settings.crash_on_completion:
            os.kill(os.getpid(), signal.SIGSEGV)
            while True:  # the kernel may hand the signal to another thread: this one never answers
                time.sleep(1)
        time.sleep(owner.settings.latency_s)
        self._respond(fault, request, user_text)

    def _embeddings(self, request: dict) -> None:
        owner = self.server.owner
        texts = request.get("input")
        texts = [texts] if isinstance(texts, str) else texts
        if not isinstance(texts, list) or not texts or not all(isinstance(t, str) and t for t in texts):
            self._send_json(400, {"error": {"message": "input must be a non-empty string or list of them",
                                            "type": "invalid_request_error"}})
            return
        fault = owner.choose_fault(texts[0], embedding=True)
        time.sleep(owner.settings.latency_s)
        if fault == "slow":
            time.sleep(owner.settings.slow_s)
        elif fault in ("empty_choices", "empty_content"):
            self._send_json(200, {"object": "list", "data": [], "model": request.get("model")})
            return
        elif fault != "ok":
            self._respond(fault, request, texts[0])  # an error, a malformed body or a dropped connection
            return
        vectors = owner.embed(texts)
        as_base64 = request.get("encoding_format") == "base64"
        data = [{"object": "embedding", "index": i,
                 "embedding": base64.b64encode(vector.astype("<f4").tobytes()).decode() if as_base64 else vector.tolist()}
                for i, vector in enumerate(vectors)]
        tokens = sum(len(text.split()) for text in texts)
        self._send_json(200, {"object": "list", "data": data, "model": request.get("model", owner.settings.embedding_model),
                              "usage": {"prompt_tokens": tokens, "total_tokens": tokens}})

    def _rerank(self, request: dict) -> None:
        owner = self.server.owner
        query, documents = request.get("query"), request.get("documents")
        if not isinstance(query, str) or not isinstance(documents, list) or not all(isinstance(d, str) for d in documents):
            self._send_json(400, {"error": {"message": "expected a query string and a list of document strings",
                                            "type": "invalid_request_error"}})
            return
        fault = owner.choose_fault(query, kind="rerank")
        time.sleep(owner.settings.latency_s)
        if fault == "slow":
            time.sleep(owner.settings.slow_s)
        elif fault in ("empty_choices", "empty_content"):
            self._send_json(200, {"results": [], "model": request.get("model")})
            return
        elif fault != "ok":
            self._respond(fault, request, query)
            return
        scores = [overlap_score(query, document) for document in documents]
        order = sorted(range(len(documents)), key=lambda i: -scores[i])[: request.get("top_n") or len(documents)]
        tokens = len(query.split()) + sum(len(document.split()) for document in documents)
        scripted = RESULTS_MARKER.search(query)
        raw = scripted.group(1) if scripted else owner.settings.rerank_results or None
        pad = PAD_MARKER.search(query)
        payload = {"model": request.get("model", owner.settings.model),
                   "results": _RAW if raw else [{"index": i, "relevance_score": scores[i]} for i in order],
                   "usage": {"total_tokens": tokens}}
        if pad:
            payload["pad"] = "x" * int(pad.group(1))
        self._send_json(200, with_raw(payload, raw))

    def _respond(self, fault: str, request: dict, user_text: str) -> None:
        settings = self.server.owner.settings
        if fault == "drop_connection":
            self.close_connection = True
            self.connection.close()
            return
        if fault in ("error_500", "error_503"):
            self._send_json(int(fault[-3:]), {"error": {"message": "injected server error", "type": "server_error"}})
            return
        echoed = "." * settings.echo_pad + self.headers.get("Authorization", "")
        if fault == "echo_auth_500":
            self._send_json(500, {"error": {"message": f"bad upstream for {echoed}", "type": "server_error"}})
            return
        if fault == "echo_auth_text":
            self.send_response(500)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(echoed.encode())))
            self.end_headers()
            self.wfile.write(echoed.encode())
            return
        if fault == "echo_auth_item":
            self._send_json(200, {"results": [{"index": echoed, "relevance_score": 1.0}],
                                  "choices": [{"index": 0, "message": {"role": "assistant", "content": echoed},
                                               "finish_reason": "stop"}]})
            return
        if fault == "bad_request_400":
            self._send_json(400, {"error": {"message": "injected bad request", "type": "invalid_request_error"}})
            return
        if fault == "rate_limit_429":
            self._send_json(429, {"error": {"message": "slow down", "type": "rate_limit"}},
                            {"Retry-After": settings.retry_after})
            return
        if fault == "malformed_json":
            self._send_json(200, b'{"id": "x", "choices": [{"message": ')
            return
        if fault == "slow":
            time.sleep(settings.slow_s)
        scripted = REPLY_MARKER.search(user_text)
        answer = (json.loads(scripted.group(1)) if scripted
                  else "stand-in answer " + hashlib.sha256(user_text.encode()).hexdigest()[:16])
        if settings.echo_auth:
            answer += f" (you sent {self.headers.get('Authorization', 'no Authorization header')})"
        if pad := PAD_MARKER.search(user_text):
            answer += "x" * int(pad.group(1))
        logprobs = LOGPROBS_MARKER.search(user_text)
        choices = [] if fault == "empty_choices" else [{
            "index": 0,
            "message": {"role": "assistant", "content": "" if fault == "empty_content" else answer},
            "finish_reason": "stop",
            **({"logprobs": _RAW} if logprobs else {}),
        }]
        prompt_tokens = sum(len(m["content"].split()) for m in request["messages"])
        raw = ('{"content": [{"token": "x", "logprob": -0.1, "top_logprobs": ' + logprobs.group(1) + "}]}"
               if logprobs and choices else None)
        self._send_json(200, with_raw({
            "id": "chatcmpl-stand-in", "object": "chat.completion", "created": 0,
            "model": request.get("model", settings.model), "choices": choices,
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": 4, "total_tokens": prompt_tokens + 4},
        }, raw))


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256
    owner: "StandInServer"

    def handle_error(self, request, client_address) -> None:
        """A client that gave up (timeout) closes its socket: not worth a traceback."""
        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            super().handle_error(request, client_address)


class StandInServer:
    """The stand-in, served from a background thread. ``port=0`` picks a free port."""

    def __init__(self, settings: StandInSettings | None = None, port: int = 0):
        self.settings = settings or StandInSettings()
        self.stats = StandInStats()
        self._lock = threading.Lock()
        self._embed_lock = threading.Lock()
        self._rng = random.Random(self.settings.seed)
        self._httpd = _Server(("127.0.0.1", port), _Handler)
        self._httpd.owner = self
        self._thread: threading.Thread | None = None
        self._hold_after: int | None = None
        self._passed = 0
        self._released = threading.Event()
        self.held = threading.Event()  # set when a chat completion request is being held

    @property
    def port(self) -> int:
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def count_request(self) -> None:
        with self._lock:
            self.stats.requests += 1

    @cached_property
    def _embedding_model(self):
        from rag.models import load_sentence_transformer

        return load_sentence_transformer(self.settings.embedding_model, device="cpu")

    def embed(self, texts: list[str]) -> np.ndarray:
        """Real embeddings of ``texts``, encoded as one batch (one request at a time)."""
        with self._embed_lock:
            self.stats.texts_embedded += len(texts)
            return self._embedding_model.encode(texts, batch_size=len(texts), convert_to_numpy=True,
                                                show_progress_bar=False).astype(np.float32)

    def choose_fault(self, user_text: str, embedding: bool = False, kind: str = "") -> str:
        with self._lock:
            if kind == "rerank":
                self.stats.rerank_requests += 1
            elif embedding:
                self.stats.embedding_requests += 1
            else:
                self.stats.completions_requests += 1
            prompt_id = hashlib.sha256(user_text.encode()).hexdigest()
            self.stats.attempts_by_prompt[prompt_id] += 1
            fault = faults_for_prompt(user_text, self.stats.attempts_by_prompt[prompt_id]) or self.settings.fault or None
            if fault is None:
                draw = self._rng.random()
                if draw < self.settings.error_rate:
                    fault = "error_500"
                elif draw < self.settings.error_rate + self.settings.timeout_rate:
                    fault = "slow"
                else:
                    fault = "ok"
            self.stats.faults[fault] += 1
            return fault

    def hold_completions(self, after: int) -> None:
        """From now on, answer ``after`` chat completion requests, then hold every later one (and set
        :attr:`held`) until :meth:`release`."""
        with self._lock:
            self._hold_after, self._passed = after, 0
            self._released.clear()
            self.held.clear()

    def release(self) -> None:
        """Let the held requests (and every later one) through."""
        with self._lock:
            self._hold_after = None
        self._released.set()

    def pass_gate(self) -> None:
        """Called by each chat completion request: returns at once unless it is to be held."""
        with self._lock:
            self._passed += 1
            held = self._hold_after is not None and self._passed > self._hold_after
        if held:
            self.held.set()
            self._released.wait()

    def serve_forever(self) -> None:
        self._httpd.serve_forever(poll_interval=0.05)

    def start(self) -> "StandInServer":
        self._thread = threading.Thread(target=self.serve_forever, name="stand-in", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.release()
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join()
            self._thread = None
        self._httpd.server_close()

    def __enter__(self) -> "StandInServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds added to every response")
    parser.add_argument("--slow", type=float, default=5.0, help="delay of a 'slow' (timeout) response")
    parser.add_argument("--error-rate", type=float, default=0.0)
    parser.add_argument("--timeout-rate", type=float, default=0.0)
    parser.add_argument("--retry-after", default="0")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--echo-auth", action="store_true", help="end every answer with the Authorization header")
    parser.add_argument("--embedding-model", default="all-MiniLM-L6-v2", help="served at /v1/embeddings")
    args = parser.parse_args(argv)
    settings = StandInSettings(latency_s=args.latency, slow_s=args.slow, retry_after=args.retry_after,
                               error_rate=args.error_rate, timeout_rate=args.timeout_rate, seed=args.seed,
                               echo_auth=args.echo_auth, embedding_model=args.embedding_model)
    server = StandInServer(settings, port=args.port)
    # Ctrl-C is how this process is stopped (StandInProcess sends it): take it even when started as a
    # background job of a shell without job control, which hands its children SIGINT ignored
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:  # the Ctrl-C may come as soon as the port is printed: while print returns
        print(f"LISTENING {server.port}", flush=True)
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
        stats = {"requests": server.stats.requests, "completions_requests": server.stats.completions_requests,
                 "embedding_requests": server.stats.embedding_requests, "rerank_requests": server.stats.rerank_requests,
                 "texts_embedded": server.stats.texts_embedded, "faults": dict(server.stats.faults)}
        print("STATS " + json.dumps(stats), flush=True)


class StandInProcess:
    """The stand-in in its own process (so a load test measures only the client's CPU and memory).
    ``stats`` holds the server's final counters after the context exits."""

    def __init__(self, *cli_args: str):
        self.cli_args = [str(arg) for arg in cli_args]
        self.stats: dict | None = None
        self._process: subprocess.Popen | None = None

    def __enter__(self) -> "StandInProcess":
        self._process = subprocess.Popen(
            [sys.executable, "-m", "rag.testing", *self.cli_args],
            stdout=subprocess.PIPE, text=True, start_new_session=True,
        )
        line = self._process.stdout.readline()
        if not line.startswith("LISTENING "):
            self._process.kill()
            raise RuntimeError(f"the stand-in server did not start (printed {line!r})")
        self.base_url = f"http://127.0.0.1:{int(line.split()[1])}/v1"
        return self

    def __exit__(self, *exc) -> None:
        self._process.send_signal(signal.SIGINT)
        try:
            output, _ = self._process.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            output, _ = self._process.communicate()
        for line in output.splitlines():
            if line.startswith("STATS "):
                self.stats = json.loads(line[len("STATS "):])


if __name__ == "__main__":
    main()
