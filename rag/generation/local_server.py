"""The managed local LLM server: ``python -m llama_cpp.server`` with a GGUF model on 127.0.0.1.

``start`` picks a free port (unless one is given), launches the server in its own process group
(so Ctrl-C in the terminal reaches the benchmark, which then stops the server in order), and waits
until ``GET /v1/models`` answers. ``stop`` sends SIGTERM to the whole group, then SIGKILL after a
grace period, so no orphan is left. On Linux the server also gets ``PR_SET_PDEATHSIG`` so it dies
with the benchmark even if the benchmark is killed with SIGKILL. Server output goes to a log file
whose last lines are shown when the server fails to start or dies.

Start-up self-check: once ``/v1/models`` answers, ``start`` sends one short chat completion (a
prompt of a few dozen tokens, two generated tokens: both the prompt-batch and the one-token matrix
products run). A server that dies on it, or while loading, by a signal (e.g. ``SIGSEGV`` in
llama.cpp's AMX matrix product, docs/generation.md) with llama.cpp's extra CPU buffer types on is
started once more with them off (:mod:`rag.generation.llama_launcher`); a second death, or one with
them already off, is a :class:`ServerCrashed` that names the signal and the log's last lines in one
line. :meth:`restart` (after a death mid-run) also switches them off when the death was a signal.

Prompt reuse: llama-cpp-python's server keeps the previous prompt in its KV cache and evaluates only
the tokens after the longest common token prefix with it (``Llama.generate``), the counterpart of
llama.cpp's ``cache_prompt``; the generator sends prompts in prefix order to profit from it. With
``verbose=True`` the server logs, per request, how many prompt tokens it reused and evaluated
(``scripts/bench_generation.py`` reads them).
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import httpx

from rag.errors import BenchError
from rag.models import quiet_thread_pools, usable_cpus
from rag.secrets import Redactor

log = logging.getLogger(__name__)

LOG_TAIL_CHARS = 2000
LOG_TAIL_LINES = 3  # in the one-line report of a dead server
LOG_LINE_CHARS = 200
DEFAULT_N_CTX = 4096
#: the server's program: llama_cpp.server behind the launcher that sets use_extra_bufts
LAUNCHER = (sys.executable, "-m", "rag.generation.llama_launcher")
SELF_CHECK_MESSAGES = [
    {"role": "system", "content": "You are a helpful assistant. Answer the question briefly."},
    {"role": "user", "content": "The Eiffel Tower is a wrought-iron lattice tower in Paris, France. "
                                "It was completed in 1889. Question: in which city is the Eiffel Tower?"},
]
SELF_CHECK_MAX_TOKENS = 2


class ServerCrashed(BenchError):
    """The managed server process ended (``by_signal``: killed by a signal, e.g. ``SIGSEGV``)."""

    def __init__(self, message: str, by_signal: bool):
        super().__init__(message)
        self.by_signal = by_signal


def exit_description(returncode: int) -> str:
    """How a process ended, from ``Popen.returncode`` (negative: killed by that signal, POSIX):
    ``"SIGSEGV (Segmentation fault)"`` or ``"exit code 1"``."""
    if returncode < 0:
        try:
            number = signal.Signals(-returncode)
        except ValueError:
            return f"signal {-returncode}"
        return f"{number.name} ({signal.strsignal(number)})"
    return f"exit code {returncode}"


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def _die_with_parent() -> None:  # runs in the child between fork and exec
    with contextlib.suppress(Exception):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # 1 = PR_SET_PDEATHSIG


class ManagedLlamaServer:
    def __init__(
        self,
        model_path: str | Path,
        log_path: str | Path,
        *,
        model_alias: str,
        port: int | None = None,
        n_ctx: int = DEFAULT_N_CTX,
        n_threads: int | None = None,
        startup_timeout_s: float = 120.0,
        host: str = "127.0.0.1",
        verbose: bool = False,
        extra_buffer_types: bool = False,
        logprobs: bool = False,
        program: Sequence[str] = LAUNCHER,
    ):
        """``extra_buffer_types``: llama.cpp's ``use_extra_bufts`` at the first start (see the module
        docstring for when it is switched off). ``logprobs``: the requests ask for log-probs (the
        ``llm`` reranker), so llama.cpp keeps every token's logits (``logits_all``). ``program``: the
        command before the server's arguments; it must accept the launcher's ``--extra_buffer_types on|off`` and
        ``llama_cpp.server``'s flags (a stand-in server for fault injection does)."""
        self.model_path = Path(model_path)
        self.log_path = Path(log_path)
        self.model_alias = model_alias
        self.host = host
        self.port = port or free_port(host)
        self.n_ctx = n_ctx
        self.n_threads = n_threads
        self.startup_timeout_s = startup_timeout_s
        self.verbose = verbose
        self.extra_buffer_types = extra_buffer_types
        self.logprobs = logprobs
        self.program = list(program)
        self.self_check: str = "not run"
        self.fallbacks: list[str] = []  # each death that switched the extra buffer types off
        self._process: subprocess.Popen | None = None
        self._redactor = Redactor.for_config()  # the server's words are redacted before they are cut

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    def command(self) -> list[str]:
        cmd = [
            *self.program, "--extra_buffer_types", "on" if self.extra_buffer_types else "off",
            "--model", str(self.model_path),
            "--model_alias", self.model_alias, "--host", self.host, "--port", str(self.port),
            "--n_ctx", str(self.n_ctx), "--verbose", str(self.verbose),
        ]
        for flag, value in self.settings().items():
            cmd += [f"--{flag}", str(value)]
        return cmd

    def settings(self) -> dict[str, int | bool]:
        """llama.cpp's settings beyond the model and the address (the run's manifest records them):

        - ``n_threads``: every CPU this process may run on (:func:`rag.models.usable_cpus`: a
          container's or ``taskset``'s limit; llama.cpp alone would use half for token generation);
        - ``flash_attn``: faster prompts and generation; n_batch / n_ubatch and a q8_0 KV cache did
          no better (measured: docs/generation.md#llama-settings);
        - ``logits_all`` off unless the requests ask for log-probs (``logprobs``: only the ``llm``
          reranker does; llama-cpp-python refuses them without it): its server turns it on by
          default, so llama.cpp computes the 49,152-word output layer for
          every prompt token and the server copies each row into an ``n_ctx`` x vocabulary float32
          array; off, only for the token that is sampled. Same answers, less prompt time
          (``scripts/bench_answer_prompts.py``, docs/generation.md).
        """
        return {"n_threads": self.n_threads or usable_cpus(), "flash_attn": True, "logits_all": self.logprobs}

    def is_running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    def start(self) -> None:
        """Launch, wait for ``/v1/models``, run the self-check; on a death by a signal with the extra
        buffer types on, once more with them off. Raises :class:`BenchError` (:class:`ServerCrashed`
        for a death) with the log's last lines; no process is left behind."""
        if self.is_running():
            return
        if not self.model_path.is_file():
            raise BenchError(f"local LLM: model file {self.model_path} not found")
        try:
            self._launch()
        except ServerCrashed as crash:
            if not (self.extra_buffer_types and crash.by_signal):
                raise
            log.warning("with llama.cpp's extra CPU buffer types on, %s; starting it again with them off "
                        "(a known llama.cpp crash on CPUs with AMX, docs/generation.md)", crash)
            self._switch_extra_buffer_types_off(crash)
            try:
                self._launch()
            except ServerCrashed as again:
                raise ServerCrashed(f"{again} (with llama.cpp's extra CPU buffer types off; "
                                    "with them on it had died too)", again.by_signal) from None

    def restart(self) -> None:
        """Start again after the process died; a death by a signal with the extra buffer types on
        switches them off first (the self-check passes, a larger batch can still take the path
        that crashes)."""
        if self._process is not None and self._process.poll() is not None and self.extra_buffer_types:
            death = self.death()
            if death.by_signal:  # the caller has reported the death itself
                log.warning("restarting the local LLM server with llama.cpp's extra CPU buffer types off "
                            "(it died by a signal with them on; docs/generation.md)")
                self._switch_extra_buffer_types_off(death)
        self.start()

    def death(self) -> ServerCrashed:
        """The one-line report of the server process, which has ended: how (the signal or exit code)
        and its log's last lines."""
        returncode = self._process.poll()
        assert returncode is not None, "death() of a running server"
        return ServerCrashed(f"the local LLM server (llama.cpp, pid {self.pid}) died with "
                             f"{exit_description(returncode)}; its log {self.log_path} ends: {self.last_log_lines()}",
                             by_signal=returncode < 0)

    def _switch_extra_buffer_types_off(self, crash: ServerCrashed) -> None:
        self.fallbacks.append(str(crash))
        self.extra_buffer_types = False

    def _launch(self) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log_file:
            self._process = subprocess.Popen(
                self.command(), stdin=subprocess.DEVNULL, stdout=log_file, stderr=subprocess.STDOUT,
                start_new_session=True, preexec_fn=_die_with_parent if sys.platform == "linux" else None,
                env=quiet_thread_pools(dict(os.environ)),  # llama.cpp's OpenMP threads sleep when idle
            )
        log.info("started llama.cpp server (pid %d, extra buffer types %s) on %s", self._process.pid,
                 "on" if self.extra_buffer_types else "off", self.base_url)
        try:
            self._wait_ready()
            self._check_completion()
        except BaseException:
            self.self_check = "failed"
            self.stop()
            raise

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.startup_timeout_s
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise self.death()
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{self.base_url}/models", timeout=2.0).status_code == 200:
                    return
            time.sleep(0.2)
        raise BenchError(
            f"local LLM server did not answer {self.base_url}/models within {self.startup_timeout_s:.0f} s "
            f"(local.startup_timeout_s); its log {self.log_path} ends: {self.last_log_lines()}"
        )

    def _check_completion(self) -> None:
        """The self-check: one short chat completion must come back with a message."""
        try:
            response = httpx.post(
                f"{self.base_url}/chat/completions", timeout=self.startup_timeout_s,
                json={"model": self.model_alias, "messages": SELF_CHECK_MESSAGES,
                      "max_tokens": SELF_CHECK_MAX_TOKENS, "temperature": 0.0},
            )
        except httpx.HTTPError as exc:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._process.wait(timeout=5.0)  # a dying server closes its socket first
            if self._process.poll() is not None:
                raise self.death() from None
            raise BenchError(f"the local LLM server's self-check completion failed ({type(exc).__name__}: "
                             f"{exc}); its log {self.log_path} ends: {self.last_log_lines()}") from None
        try:
            answered = response.status_code == 200 and bool(response.json().get("choices"))
        except ValueError:
            answered = False
        if not answered:
            raise BenchError(f"the local LLM server's self-check completion answered HTTP {response.status_code}: "
                             f"{self._redactor.excerpt(response.text, LOG_LINE_CHARS)!r}; its log {self.log_path} "
                             f"ends: {self.last_log_lines()}")
        self.self_check = "ok"

    def last_log_lines(self) -> str:
        """The log's last :data:`LOG_TAIL_LINES` non-empty lines (within its last
        :data:`LOG_TAIL_CHARS` characters), each redacted, cut to :data:`LOG_LINE_CHARS`, quoted and
        joined on one line."""
        try:
            tail = self.log_path.read_text(errors="replace")[-LOG_TAIL_CHARS:]
        except OSError:
            return "(no log)"
        lines = [line.strip() for line in tail.splitlines() if line.strip()][-LOG_TAIL_LINES:]
        return " | ".join(repr(self._redactor.excerpt(line, LOG_LINE_CHARS)) for line in lines) or "(empty)"

    def stop(self, grace_s: float = 10.0) -> None:
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        log.info("stopped llama.cpp server (pid %d)", process.pid)

    def __enter__(self) -> "ManagedLlamaServer":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
