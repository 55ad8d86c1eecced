"""The managed local LLM server: ``python -m llama_cpp.server`` with a GGUF model on 127.0.0.1.

``start`` picks a free port (unless one is given), launches the server in its own process group
(so Ctrl-C in the terminal reaches the benchmark, which then stops the server in order), and waits
until ``GET /v1/models`` answers. ``stop`` sends SIGTERM to the whole group, then SIGKILL after a
grace period, so no orphan is left. On Linux the server also gets ``PR_SET_PDEATHSIG`` so it dies
with the benchmark even if the benchmark is killed with SIGKILL. Server output goes to a log file
whose tail is shown when the server fails to start.

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
from pathlib import Path

import httpx

from rag.errors import BenchError
from rag.models import quiet_thread_pools

log = logging.getLogger(__name__)

LOG_TAIL_CHARS = 2000
DEFAULT_N_CTX = 4096


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
    ):
        self.model_path = Path(model_path)
        self.log_path = Path(log_path)
        self.model_alias = model_alias
        self.host = host
        self.port = port or free_port(host)
        self.n_ctx = n_ctx
        self.n_threads = n_threads
        self.startup_timeout_s = startup_timeout_s
        self.verbose = verbose
        self._process: subprocess.Popen | None = None

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    def command(self) -> list[str]:
        cmd = [
            sys.executable, "-m", "llama_cpp.server", "--model", str(self.model_path),
            "--model_alias", self.model_alias, "--host", self.host, "--port", str(self.port),
            "--n_ctx", str(self.n_ctx), "--verbose", str(self.verbose),
        ]
        # llama.cpp defaults to half the cores for token generation; a benchmark machine gives it all.
        cmd += ["--n_threads", str(self.n_threads or os.cpu_count() or 1)]
        # Flash attention: prompts of ~1,100 tokens (ten chunks) 270 instead of 208 tokens/s on 2 cores,
        # generation 100 instead of 78; n_batch / n_ubatch (256-2048) and a q8_0 KV cache (slower)
        # did no better (scripts/bench_llama_settings.py, docs/generation.md).
        cmd += ["--flash_attn", "True"]
        return cmd

    def is_running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    def start(self) -> None:
        if self.is_running():
            return
        if not self.model_path.is_file():
            raise BenchError(f"local LLM: model file {self.model_path} not found")
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log_file:
            self._process = subprocess.Popen(
                self.command(), stdin=subprocess.DEVNULL, stdout=log_file, stderr=subprocess.STDOUT,
                start_new_session=True, preexec_fn=_die_with_parent if sys.platform == "linux" else None,
                env=quiet_thread_pools(dict(os.environ)),  # llama.cpp's OpenMP threads sleep when idle
            )
        log.info("started llama.cpp server (pid %d) on %s", self._process.pid, self.base_url)
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.startup_timeout_s
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise BenchError(
                    f"local LLM server exited with code {self._process.returncode} during startup; "
                    f"its log ({self.log_path}) ends with:\n{self.log_tail()}"
                )
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{self.base_url}/models", timeout=2.0).status_code == 200:
                    return
            time.sleep(0.2)
        raise BenchError(
            f"local LLM server did not answer {self.base_url}/models within {self.startup_timeout_s:.0f} s "
            f"(local.startup_timeout_s); its log ({self.log_path}) ends with:\n{self.log_tail()}"
        )

    def log_tail(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-LOG_TAIL_CHARS:]
        except OSError:
            return "(no log)"

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
