"""Benchmark: llama.cpp server settings for the local SmolLM2, on prompts shaped like the main job's.

Each setting starts ``python -m llama_cpp.server`` with the project's command (``ManagedLlamaServer``:
through ``rag.generation.llama_launcher`` with llama.cpp's extra CPU buffer types off, the packaged
SmolLM2 GGUF, all cores, flash attention, OpenMP's short spin) plus the setting's flags
and environment, then sends ``--prompts`` chat requests of ten bundled wiki chunks and a question
(about 1,100 prompt tokens, like the wiki config's answers), each twice: ``max_tokens=1`` (prompt
processing: its wall time) and ``max_tokens=64`` (the prompt is then in the KV cache, so the
generated tokens/s come from llama.cpp's own ``eval time`` log line). The first prompt warms up and
is not counted. llama.cpp's ``prompt eval time`` is not used: it leaves the first batch of a context
out (it counts it as load time).

The 2-core reference: SmolLM2's float operations per prompt token (2 per weight of the 30 layers,
plus causal attention at the mean prompt length) at this CPU's float32 matrix-product rate
(``scripts/bench_dense.py``'s ``matmul_peak``); its weights are 4-bit (Q4_1), so this is a
reference, not a bound. Generation of a 135M model moves 98 MB of weights per token: memory is not
its limit either (at 100 tokens/s that is 10 GB/s); the per-token overhead of ~30 layers of small
operations and their thread barriers is.

    python scripts/bench_llama_settings.py [--prompts 4] [--settings default flash-off ...]
"""

from __future__ import annotations

import argparse
import os
import random
import re
import subprocess
import tempfile
import time
from pathlib import Path

import httpx

from rag.generation.local_server import ManagedLlamaServer
from rag.models import quiet_thread_pools, smollm2_gguf_path

from bench_bm25 import wiki_chunks  # noqa: E402  (scripts/ is on sys.path)
from bench_dense import matmul_peak  # noqa: E402

GENERATION = re.compile(r"print:\s+eval time =\s*([\d.]+) ms /\s*(\d+) runs")
#: name -> (extra server flags, environment overrides); "default" is the project's command as is.
SETTINGS: dict[str, tuple[list[str], dict[str, str]]] = {
    "default": ([], {}),
    "extra-buffer-types-on": (["--extra_buffer_types", "on"], {}),
    "extra-buffer-types-off": (["--extra_buffer_types", "off"], {}),
    "flash-off": (["--flash_attn", "False"], {}),
    "logits-all-on": (["--logits_all", "True"], {}),
    "ubatch-256": (["--n_ubatch", "256"], {}),
    "batch-2048-ubatch-1024": (["--n_batch", "2048", "--n_ubatch", "1024"], {}),
    "kv-q8_0": (["--type_k", "8", "--type_v", "8"], {}),
    "generation-1-thread": (["--n_threads", "1", "--n_threads_batch", str(os.cpu_count() or 1)], {}),
    "never-spin": ([], {"GOMP_SPINCOUNT": "0"}),
    "spin-10000": ([], {"GOMP_SPINCOUNT": "10000"}),
}


def wiki_prompts(n: int) -> list[list[dict[str, str]]]:
    """``n`` chat prompts: ten seeded random chunks of the bundled corpus and a bundled question."""
    chunks, questions = wiki_chunks()
    rng = random.Random(0)
    prompts = []
    for question in questions[:n]:
        context = "\n\n".join(f"[{i + 1}] {chunk.text}" for i, chunk in enumerate(rng.sample(chunks, 10)))
        prompts.append([{"role": "system", "content": "Answer the question from the context. Be brief."},
                        {"role": "user", "content": f"Context:\n{context}\n\nQuestion: {question}"}])
    return prompts


def server_command(flags: list[str], log_path: Path, n_ctx: int = 4352) -> tuple[list[str], str]:
    """The managed server's command (verbose, on a free port) with ``flags`` (pairs) applied: a flag
    given again replaces the project's value; and its base URL."""
    server = ManagedLlamaServer(smollm2_gguf_path(), log_path, model_alias="smollm2", n_ctx=n_ctx, verbose=True)
    command = server.command()
    for flag, value in zip(flags[::2], flags[1::2]):
        if flag in command:
            command[command.index(flag) + 1] = value
        else:
            command += [flag, value]
    return command, server.base_url


def measure(flags: list[str], environment: dict[str, str], prompts: list, directory: Path) -> dict[str, float]:
    """Mean prompt tokens, prompt tokens/s (wall of max_tokens=1 requests), generated tokens/s."""
    log_path = directory / "server.log"
    command, base_url = server_command(flags, log_path)
    with open(log_path, "wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                                   env={**quiet_thread_pools(dict(os.environ)), **environment})
    try:
        for _ in range(600):
            try:
                if httpx.get(f"{base_url}/models", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.2)
        prompt_tokens, prompt_s, log_start = 0, 0.0, 0
        for i, messages in enumerate(prompts):
            for max_tokens in (1, 64):
                start = time.perf_counter()
                response = httpx.post(f"{base_url}/chat/completions", timeout=600,
                                      json={"messages": messages, "max_tokens": max_tokens, "temperature": 0, "seed": 0})
                response.raise_for_status()
                if i and max_tokens == 1:
                    prompt_s += time.perf_counter() - start
                    prompt_tokens += response.json()["usage"]["prompt_tokens"]
            if i == 0:
                log_start = log_path.stat().st_size
        log = log_path.read_bytes()[log_start:].decode(errors="replace")
        generated = [(float(ms), int(runs)) for ms, runs in GENERATION.findall(log) if int(runs) > 5]
        return {"prompt_tokens": prompt_tokens / (len(prompts) - 1), "prompt_tps": prompt_tokens / prompt_s,
                "generation_tps": 1000 * sum(runs for _, runs in generated) / sum(ms for ms, _ in generated)}
    finally:
        process.terminate()
        process.wait()


def flops_per_prompt_token(length: float) -> float:
    """SmolLM2-135M's float operations per token of a prompt of ``length`` tokens: 2 per layer weight,
    plus causal attention at the mean length L/2 (30 layers, hidden 576, 3 of 9 heads for keys and
    values (192 wide), SwiGLU 1536)."""
    layers, hidden = 30, 576
    layer_weights = layers * (2 * hidden * hidden + 2 * hidden * 192 + 3 * hidden * 1536)  # 106M
    return 2 * layer_weights + layers * 4 * hidden * length / 2


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=4, help="prompts counted (one more warms up)")
    parser.add_argument("--settings", nargs="+", choices=list(SETTINGS), default=list(SETTINGS))
    args = parser.parse_args()

    prompts = wiki_prompts(args.prompts + 1)
    print(f"SmolLM2-135M-Instruct Q4_1, {os.cpu_count()} threads, {args.prompts} prompts of ten wiki chunks")
    results = {}
    for name in args.settings:
        flags, environment = SETTINGS[name]
        with tempfile.TemporaryDirectory() as directory:
            results[name] = measure(flags, environment, prompts, Path(directory))
        r = results[name]
        print(f"  {name:>24}: prompt {r['prompt_tps']:6.0f} tokens/s ({r['prompt_tokens']:.0f} tokens, "
              f"{r['prompt_tokens'] / r['prompt_tps']:.2f} s) | generation {r['generation_tps']:6.1f} tokens/s", flush=True)

    length = next(iter(results.values()))["prompt_tokens"]
    flops_per_token = flops_per_prompt_token(length)
    rate = matmul_peak()["2048x2048x2048"]
    best = max(results.values(), key=lambda r: r["prompt_tps"])
    print(f"reference: {flops_per_token / 1e9:.2f} GFLOP per prompt token; float32 matrix product {rate:.0f} GFLOP/s "
          f"-> {rate * 1e9 / flops_per_token:.0f} prompt tokens/s at 100%; the best setting reaches "
          f"{best['prompt_tps'] * flops_per_token / rate / 1e9:.0%}")


if __name__ == "__main__":
    main()
