"""Benchmark: the main job's answer prompts through the torch engine, against llama.cpp's answers.

    python scripts/bench_answer_prompts.py dump            # the main job's prompts, once
    python scripts/bench_torch_answers.py [--first N] [--batch-sizes 8 16] [--llama-cache .cache/generation]

For each batch size, the prompts (``.cache/bench/main_job_prompts.json``, written by ``dump``) go
through ``TorchGenerator`` (``engine: torch``) with a fresh cache: the wall time with and without
loading the model, the prompts' tokens per second (counted whole: the starts a prompt shares with
the previous one of its batch are reused, so fewer are evaluated), and the share of this CPU's
float32 matrix-product rate that is
(``bench_dense.matmul_peak``; float operations per token as ``bench_llama_settings`` counts them).
Then the same prompts through llama.cpp (``engine: llama_cpp``, the managed server) with the
``--llama-cache`` cache, so answers a main job run already cached cost nothing (the others are
sent): the number of identical answers, and the answers that differ (``--show``).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from rag.models import quiet_thread_pools

quiet_thread_pools()

from rag.generation import GenerationRequest, LocalGeneratorConfig, build_generator  # noqa: E402
from rag.generation.prompt import Prompt  # noqa: E402

from bench_answer_prompts import DEFAULT_PROMPTS  # noqa: E402  (scripts/ is on sys.path)
from bench_dense import matmul_peak  # noqa: E402
from bench_llama_settings import flops_per_prompt_token  # noqa: E402


class Replay:
    """A prompt builder that gives request ``p<i>`` the dumped messages of prompt i."""

    def __init__(self, prompts: list):
        self.prompts = prompts

    def build(self, request: GenerationRequest) -> Prompt:
        return Prompt(self.prompts[int(request.question)], 0, False, 0)


def answers(config: LocalGeneratorConfig, cache_dir: Path, prompts: list) -> tuple[list, float, float, dict]:
    requests = [GenerationRequest(f"p{i}", str(i), ["-"]) for i in range(len(prompts))]
    started = time.perf_counter()
    with build_generator(config, cache_dir, prompt_builder=Replay(prompts)) as generator:
        loaded = time.perf_counter()
        if hasattr(generator, "engine"):
            generator.engine()
            loaded = time.perf_counter()
        results = generator.generate(requests)
        done = time.perf_counter()
        facts = generator.run_facts()
    return results, done - started, done - loaded, facts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=Path, default=DEFAULT_PROMPTS)
    parser.add_argument("--first", type=int, default=None, help="only the first N prompts (send order)")
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[8])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--llama-cache", type=Path, default=Path(".cache/generation"),
                        help="llama.cpp's answers are read from (and sent ones added to) this cache; 'fresh': a new "
                             "one, so every prompt is sent and the wall time is llama.cpp's on these prompts")
    parser.add_argument("--show", action="store_true", help="print the answers that differ")
    args = parser.parse_args()

    dumped = json.loads(args.prompts.read_text())
    prompts = dumped["prompts"][: args.first]
    max_tokens = dumped["parameters"]["max_tokens"]
    rate = matmul_peak()["2048x2048x2048"]
    print(f"{len(prompts)} prompts; float32 matrix product on this CPU: {rate:.0f} GFLOP/s")
    torch_answers = None
    for batch_size in args.batch_sizes:
        config = LocalGeneratorConfig(engine="torch", batch_size=batch_size, n_threads=args.threads,
                                      max_tokens=max_tokens)
        with tempfile.TemporaryDirectory() as directory:
            results, wall, compute, _ = answers(config, Path(directory), prompts)
        tokens = sum(r.prompt_tokens for r in results)
        generated = sum(r.completion_tokens for r in results)
        failed = sum(r.failed for r in results)
        flops = sum(flops_per_prompt_token(r.prompt_tokens) * r.prompt_tokens for r in results)
        print(f"torch, batch {batch_size}: {wall:.1f} s with loading, {compute:.1f} s answering "
              f"({compute / len(prompts):.2f} s an answer); {tokens} prompt tokens, {generated} generated, "
              f"{failed} failed; {tokens / compute:.0f} prompt tokens/s with generation included = "
              f"{flops / compute / 1e9 / rate:.0%} of the matrix-product rate", flush=True)
        torch_answers = torch_answers or results
    config = LocalGeneratorConfig(engine="llama_cpp", n_threads=args.threads, max_tokens=max_tokens)
    with tempfile.TemporaryDirectory() as directory:
        cache = Path(directory) if str(args.llama_cache) == "fresh" else args.llama_cache
        llama, wall, _, _ = answers(config, cache, prompts)
    sent = sum(not r.cached for r in llama)
    same = sum(a.answer == b.answer for a, b in zip(torch_answers, llama))
    print(f"llama.cpp: {len(llama) - sent} answers from {args.llama_cache}, {sent} sent: {wall:.1f} s with the "
          f"server's start ({wall / len(prompts):.2f} s an answer)")
    print(f"identical answers: {same} of {len(prompts)} ({same / len(prompts):.0%})")
    if args.show:
        for a, b in zip(torch_answers, llama):
            if a.answer != b.answer:
                print(f"  torch: {a.answer!r}\n  llama: {b.answer!r}")


if __name__ == "__main__":
    main()
