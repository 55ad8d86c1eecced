"""Generation throughput: concurrency 1 vs 8 against a stand-in with fixed latency, tokens/s of the
managed local SmolLM2 server, and the generation stage of the wiki config.

    python scripts/bench_generation.py [--requests 48] [--latency 0.2] [--skip-local]
    python scripts/bench_generation.py --wiki [--limit 5] [--config configs/wiki.yaml]

Part 1 sends the same questions through the ``openai`` generator (fresh cache each time) to a stand-in
server in its own process that answers every request after ``--latency`` seconds; the goal is a
>= 5x speed-up at concurrency 8. Part 2 starts the local llama.cpp server and measures prompt
processing and generation speed (see ``bench_local``). ``--wiki`` runs the wiki config's pipeline on
the first ``--limit`` questions of every set, every one of them answered by every method, with a
fresh generation cache (retrieval from the config's cache) and prints answers needed vs requests
sent (one per distinct prompt) and the prompt tokens the server evaluated vs those it was sent
(llama.cpp reuses the prefix shared with the previous prompt) — see ``bench_wiki``.
"""

from __future__ import annotations

import argparse
import re
import tempfile
import time
from pathlib import Path

from rag.generation import (
    GenerationRequest, LocalGenerator, LocalGeneratorConfig, OpenAIGeneratorConfig, build_generator,
)
from rag.testing import StandInProcess

REPO = Path(__file__).resolve().parents[1]
PROMPT_EVAL = re.compile(r"prompt eval time =\s*[\d.]+ ms /\s*(\d+) tokens")

PASSAGE = (
    "The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris, France. It is named "
    "after the engineer Gustave Eiffel, whose company designed and built the tower from 1887 to 1889 as "
    "the centerpiece of the 1889 World's Fair. Locally nicknamed the Iron Lady, it was initially criticised "
    "by some of France's leading artists and intellectuals for its design, but it has become a global "
    "cultural icon of France and one of the most recognisable structures in the world."
)
QUESTIONS = [
    "Who designed the Eiffel Tower?", "When was the Eiffel Tower built?", "Where is the Eiffel Tower?",
    "What is the Eiffel Tower made of?", "What is the nickname of the Eiffel Tower?",
    "For which event was the Eiffel Tower built?",
]


def make_requests(n: int, n_chunks: int) -> list[GenerationRequest]:
    return [GenerationRequest(f"q{i}", f"{QUESTIONS[i % len(QUESTIONS)]} (#{i})", [PASSAGE] * n_chunks)
            for i in range(n)]


def timed_run(config, requests) -> tuple[float, list]:
    with tempfile.TemporaryDirectory() as cache_dir, build_generator(config, cache_dir) as generator:
        started = time.perf_counter()
        results = generator.generate(requests)
        return time.perf_counter() - started, results


def bench_concurrency(n_requests: int, latency: float) -> None:
    requests = make_requests(n_requests, n_chunks=3)
    with StandInProcess("--latency", latency) as server:
        rates = {}
        for concurrency in (1, 8):
            config = OpenAIGeneratorConfig(model="stand-in", base_url=server.base_url, concurrency=concurrency,
                                           api_key_env="RAG_BENCH_NO_KEY")
            elapsed, results = timed_run(config, requests)
            assert all(r.answer for r in results), [r for r in results if r.failed][:3]
            rates[concurrency] = n_requests / elapsed
            print(f"stand-in ({latency * 1000:.0f} ms latency), concurrency {concurrency}: "
                  f"{n_requests} requests in {elapsed:.2f} s = {rates[concurrency]:.1f} req/s")
    ratio = rates[8] / rates[1]
    print(f"speed-up concurrency 8 vs 1: {ratio:.2f}x (goal >= 5x; ideal 8x) -> {'OK' if ratio >= 5 else 'BELOW GOAL'}")


def bench_local(n_requests: int) -> None:
    """One server, two generators: for each question a ``max_tokens=1`` request (prompt processing)
    immediately followed by a ``max_tokens=64`` one whose prompt llama.cpp finds in its KV cache (the
    common prefix is reused), so its latency is almost pure generation."""
    requests = [GenerationRequest(r.key, r.question, [f"(passage {r.key}) {c}" for c in r.contexts])
                for r in make_requests(n_requests + 1, n_chunks=2)]
    configs = {m: LocalGeneratorConfig(max_tokens=m, n_ctx=1024) for m in (1, 64)}
    totals = {m: [0, 0, 0.0] for m in configs}
    with tempfile.TemporaryDirectory() as cache_dir:
        prompt_only = LocalGenerator.from_config(configs[1], Path(cache_dir))
        server = prompt_only.server
        with prompt_only, LocalGenerator(configs[64], Path(cache_dir), server) as full:
            prompt_only.generate(requests[:1])  # warm-up: loads the model pages
            for request in requests[1:]:
                for max_tokens, generator in ((1, prompt_only), (64, full)):
                    [result] = generator.generate([request])
                    assert result.answer, result
                    totals[max_tokens][0] += result.prompt_tokens
                    totals[max_tokens][1] += result.completion_tokens
                    totals[max_tokens][2] += result.latency_s
    prompt_tokens, _, prompt_s = totals[1]
    _, completion_tokens, generation_s = totals[64]
    print(f"local SmolLM2 ({n_requests} questions, {prompt_tokens / n_requests:.0f} prompt tokens each):")
    print(f"  prompt processing: {prompt_tokens / prompt_s:.0f} tokens/s (max_tokens=1, {prompt_s:.2f} s)")
    print(f"  generation: {completion_tokens / generation_s:.0f} tokens/s "
          f"({completion_tokens} tokens in {generation_s:.2f} s, prompt already in the KV cache)")


def bench_wiki(config_path: Path, limit: int) -> None:
    """The wiki config's generation stage, cold, on ``limit`` questions per set (all answered).

    The managed server runs with ``verbose`` on, so llama.cpp logs the prompt tokens it evaluated for
    each request (``prompt eval time = ... / N tokens``: the part after the prefix it reused)."""
    from rag.config import load_config
    from rag.models import smollm2_gguf_path
    from rag.generation.local_server import ManagedLlamaServer
    from rag.runner.pipeline import RunOptions, run_benchmark

    config = load_config(config_path, [f"limit={limit}", "generation.questions_per_set=null"])
    with tempfile.TemporaryDirectory() as directory:
        log_path = Path(directory) / "llama_server.log"

        def local_generator(generator_config, cache_dir):
            server = ManagedLlamaServer(smollm2_gguf_path(), log_path, model_alias=generator_config.model,
                                        n_ctx=generator_config.n_ctx, n_threads=generator_config.n_threads,
                                        verbose=True)
            return LocalGenerator(generator_config, Path(directory), server)

        result = run_benchmark(config, RunOptions(output_dir=Path(directory) / "run", progress=False),
                               generator_factory=local_generator)
        evaluated = sum(int(n) for n in PROMPT_EVAL.findall(log_path.read_text(errors="replace")))
    counts = result.manifest["generation_counts"]
    sizing = result.manifest["generator_resolved"]
    per_query = result.per_query
    sent = per_query[per_query["attempts"] > 0]
    seconds = result.timings["generate"]
    methods = per_query["method"].nunique()
    print(f"wiki config, first {limit} questions of {per_query['question_set'].nunique()} sets, {methods} methods "
          f"(context budget {sizing['context_token_budget']} tokens, n_ctx {sizing['n_ctx']}, "
          f"mean chunks per answer {per_query['chunks_used'].mean():.2f}):")
    print(f"  answers needed {counts['needed']}, distinct prompts {counts['distinct']}, requests sent {counts['sent']} "
          f"({counts['needed'] - counts['distinct']} answered by a shared prompt)")
    print(f"  prompt tokens sent {int(sent['prompt_tokens'].sum())}, evaluated by the server {evaluated} "
          f"(prefix reuse), completion tokens {int(sent['completion_tokens'].sum())}")
    print(f"  generate stage {seconds:.1f} s: {seconds / counts['needed']:.2f} s per answer needed, "
          f"{seconds / max(counts['sent'], 1):.2f} s per request sent")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=48)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--local-requests", type=int, default=6)
    parser.add_argument("--skip-local", action="store_true")
    parser.add_argument("--wiki", action="store_true", help="only the wiki config's generation stage")
    parser.add_argument("--limit", type=int, default=5, help="--wiki: questions per set")
    parser.add_argument("--config", type=Path, default=REPO / "configs" / "wiki.yaml")
    args = parser.parse_args()
    if args.wiki:
        bench_wiki(args.config, args.limit)
        return
    bench_concurrency(args.requests, args.latency)
    if not args.skip_local:
        bench_local(args.local_requests)


if __name__ == "__main__":
    main()
