"""Load test: 5,000 questions through the generator against a stand-in server injecting faults.

    python scripts/bench_load.py [--questions 5000] [--error-rate 0.10] [--timeout-rate 0.05]

The stand-in (its own process) answers 500 to ``--error-rate`` of the requests and delays
``--timeout-rate`` of them past the client's timeout. Checks, each printed as OK/FAIL (exit code 1 on
any FAIL): every question ends answered or recorded failed, in order, none lost, none duplicated
(results, callbacks and cache records); the server saw exactly the attempts the results report;
resident memory stays flat (RSS sampled every 250 results); a second run over the same cache sends
requests only for the questions that failed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from rag.generation import GenerationRequest, OpenAIGeneratorConfig, build_generator
from rag.generation.cache import CACHE_FILE_NAME
from rag.testing import StandInProcess

PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")


def rss_mb() -> float:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * PAGE_SIZE / 2**20


def make_requests(n: int) -> list[GenerationRequest]:
    return [GenerationRequest(f"q{i:05d}", f"What is fact number {i}?",
                              [f"Fact number {i} is that {i} squared is {i * i}.", f"Unrelated passage {i % 97}."])
            for i in range(n)]


def run_once(config, cache_dir: Path, requests, sample_every: int):
    callbacks: Counter = Counter()
    samples: list[tuple[int, float]] = []

    def on_result(result) -> None:
        callbacks[result.key] += 1
        if len(callbacks) % sample_every == 0:
            samples.append((len(callbacks), rss_mb()))

    with build_generator(config, cache_dir) as generator:
        started = time.perf_counter()
        results = generator.generate(requests, on_result=on_result)
        elapsed = time.perf_counter() - started
    return results, callbacks, samples, elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=5000)
    parser.add_argument("--error-rate", type=float, default=0.10)
    parser.add_argument("--timeout-rate", type=float, default=0.05)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--timeout", type=float, default=0.25, help="client per-request timeout (s)")
    parser.add_argument("--max-retries", type=int, default=3)
    args = parser.parse_args()
    requests = make_requests(args.questions)
    checks: list[tuple[str, bool]] = []
    with tempfile.TemporaryDirectory() as tmp, StandInProcess(
        "--error-rate", args.error_rate, "--timeout-rate", args.timeout_rate, "--slow", 4 * args.timeout, "--seed", 0,
    ) as server:
        config = OpenAIGeneratorConfig(
            model="stand-in", base_url=server.base_url, api_key_env="RAG_BENCH_NO_KEY", concurrency=args.concurrency,
            timeout_s=args.timeout, max_retries=args.max_retries, backoff={"initial_s": 0.01, "max_s": 0.1},
        )
        rss_start = rss_mb()
        results, callbacks, samples, elapsed = run_once(config, Path(tmp), requests, sample_every=250)
        answered = [r for r in results if not r.failed]
        failed = [r for r in results if r.failed]
        records = [json.loads(line)["key"] for line in (Path(tmp) / CACHE_FILE_NAME).read_text().splitlines()]
        attempts = sum(r.attempts for r in results)
        checks += [
            ("one result per question, in order", [r.key for r in results] == [q.key for q in requests]),
            ("each question answered xor recorded failed",
             all((r.answer is None) == (r.error_kind is not None) for r in results)),
            ("on_result called exactly once per question",
             set(callbacks) == {q.key for q in requests} and set(callbacks.values()) == {1}),
            ("one cache record per answered question", len(records) == len(set(records)) == len(answered)),
        ]
        rerun, _, _, rerun_elapsed = run_once(config, Path(tmp), requests, sample_every=10**9)
    # An attempt the client abandoned (timeout) may never have reached the server: bounds, not equality.
    all_results = results + rerun
    client_attempts = sum(r.attempts for r in all_results)
    timed_out = sum(r.extra["attempt_errors"].count("timeout") for r in all_results if "attempt_errors" in r.extra)
    server_attempts = server.stats["completions_requests"]
    rerun_attempts = sum(r.attempts for r in rerun)
    checks += [
        ("server saw the attempts reported (up to abandoned timeouts)",
         client_attempts - timed_out <= server_attempts <= client_attempts),
        ("re-run sends requests only for failed questions",
         all(r.cached for r in rerun if r.key not in {f.key for f in failed})
         and not any(r.cached for r in rerun if r.key in {f.key for f in failed})),
    ]
    rss_values = [mb for _, mb in samples]
    first_fifth = rss_values[len(rss_values) // 5]
    growth = rss_values[-1] - first_fifth
    checks.append(("RSS flat: < 50 MB growth from 20% to 100% of the run", growth < 50))

    print(f"{args.questions} questions, concurrency {args.concurrency}, timeout {args.timeout} s, "
          f"max_retries {args.max_retries}, injected {args.error_rate:.0%} errors + {args.timeout_rate:.0%} timeouts")
    print(f"run 1: {elapsed:.1f} s ({args.questions / elapsed:.0f} questions/s); answered {len(answered)}, "
          f"failed {len(failed)} {dict(Counter(r.error_kind for r in failed))}; {attempts} attempts "
          f"({attempts / args.questions:.3f} per question); attempt errors "
          f"{dict(Counter(e for r in results for e in r.extra['attempt_errors']))}")
    print(f"server: {server_attempts} chat requests over both runs (client attempts {client_attempts}, "
          f"{timed_out} abandoned on timeout); injected {server.stats['faults']}")
    print(f"run 2 (same cache): {rerun_elapsed:.1f} s; {rerun_attempts} requests sent for the {len(failed)} failed; "
          f"answered now {sum(not r.failed for r in rerun)}")
    print(f"RSS MB: start {rss_start:.0f}; at n results: "
          + ", ".join(f"{n}: {mb:.0f}" for n, mb in samples[:: max(1, len(samples) // 10)])
          + f"; growth 20%->100%: {growth:+.1f} MB")
    for name, ok in checks:
        print(f"[{'OK' if ok else 'FAIL'}] {name}")
    return 0 if all(ok for _, ok in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
