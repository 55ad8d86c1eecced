"""Benchmark: the main job's own answer prompts replayed against the managed llama.cpp server, A/B.

    python scripts/bench_answer_prompts.py dump [--config configs/wiki.yaml] [--out PATH]
    python scripts/bench_answer_prompts.py replay [--first 12] [--rounds 2] [--settings default logits-all-on ...]

``dump`` runs the config's pipeline (retrieval from its cache) with a recording client in front of a
stand-in server, so it writes the exact chat messages the generation stage sends, in the order it
sends them (distinct prompts, prefix order), to a JSON file. It also prints, with the served model's
own tokenizer, how many prompt tokens the requests carry and how many remain to be evaluated when
each reuses its longest common token prefix with the previous one (llama-cpp-python's prompt reuse).

``replay`` sends the first ``--first`` of those prompts (consecutive, so the prefix reuse is the
run's) with the generator's parameters (temperature 0, ``max_tokens`` and seed of the config) to one
server per setting (``bench_llama_settings.SETTINGS``: the project's command plus the setting's flags
and environment), settings alternating for ``--rounds`` rounds. Per setting and round it prints the
wall time, the server's CPU time (``/proc/<pid>/stat``: utime + stime of all its threads, the
steadier figure on a loaded machine), the prompt tokens llama.cpp evaluated (its verbose log's
``prompt eval time ... / N tokens``; the rest was reused from the KV cache), the generated tokens,
and whether every answer equals the first setting's.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import tempfile
import time
from pathlib import Path

import httpx

from rag.generation.torch_engine import common_prefix
from rag.models import quiet_thread_pools, smollm2_gguf_path

from bench_llama_settings import SETTINGS, server_command  # noqa: E402  (scripts/ is on sys.path)

REPO = Path(__file__).resolve().parents[1]
DEFAULT_PROMPTS = REPO / ".cache" / "bench" / "main_job_prompts.json"
PROMPT_EVAL = re.compile(r"prompt eval time =\s*([\d.]+) ms /\s*(\d+) tokens")


def dump(config_path: Path, out: Path) -> None:
    """Write the generation stage's messages, in send order, and the prompt tokens with and without
    prefix reuse (SmolLM2's tokenizer through llama.cpp, with its chat template)."""
    from rag.config import load_config
    from rag.generation.llm import ChatGenerator, default_client_factory
    from rag.runner.pipeline import RunOptions, run_benchmark
    from rag.testing import StandInServer, StandInSettings

    sent: list[list[dict[str, str]]] = []
    parameters: dict = {}

    def recording_client(base_url: str, api_key: str):
        client = default_client_factory(base_url, api_key)
        create = client.chat.completions.create

        async def record(**kwargs):
            sent.append(kwargs["messages"])
            parameters.update({k: kwargs[k] for k in ("temperature", "max_tokens", "seed")})
            return await create(**kwargs)

        client.chat.completions.create = record
        return client

    config = load_config(config_path, [])
    with StandInServer(StandInSettings(model=config.generation.generator.model)) as stand_in, tempfile.TemporaryDirectory() as directory:
        def generator(generator_config, cache_dir):
            return ChatGenerator(generator_config, directory, base_url=stand_in.base_url, endpoint_id="dump",
                                 api_key=None, client_factory=recording_client)

        run_benchmark(config, RunOptions(output_dir=Path(directory) / "run", progress=False), generator_factory=generator)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"parameters": parameters, "prompts": sent}))
    tokens = prompt_tokens(sent)
    reused = [common_prefix(a, b) for a, b in zip([[]] + tokens, tokens)]
    total = sum(map(len, tokens))
    print(f"{len(sent)} prompts written to {out}: {total} prompt tokens, {total - sum(reused)} after reusing the "
          f"prefix shared with the previous prompt ({sum(reused) / total:.1%} reused; "
          f"{sum(r > 0 for r in reused)} prompts reuse something, mean {sum(reused) / len(reused):.0f} tokens)")


def prompt_tokens(prompts: list[list[dict[str, str]]]) -> list[list[int]]:
    """SmolLM2's token ids of each chat prompt as llama-cpp-python's server builds them (its chat
    template from the GGUF, then its tokenizer)."""
    from llama_cpp import Llama
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    llm = Llama(str(smollm2_gguf_path()), vocab_only=True, verbose=False)
    formatter = Jinja2ChatFormatter(llm.metadata["tokenizer.chat_template"], eos_token="<|im_end|>",
                                    bos_token="<|im_start|>", add_generation_prompt=True)
    return [llm.tokenize(formatter(messages=messages).prompt.encode(), add_bos=False, special=True) for messages in prompts]


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime


def replay(name: str, prompts: list, parameters: dict, directory: Path) -> dict:
    """One server with setting ``name``; the prompts in order; totals and the answers."""
    flags, environment = SETTINGS[name]
    log_path = directory / f"{name}.log"
    command, base_url = server_command(flags, log_path)
    with open(log_path, "wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                                   env={**quiet_thread_pools(dict(os.environ)), **environment})
    try:
        for _ in range(1200):
            try:
                if httpx.get(f"{base_url}/models", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.2)
        httpx.post(f"{base_url}/chat/completions", timeout=600,  # warm-up: the model's pages
                   json={"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 2}).raise_for_status()
        log_start = log_path.stat().st_size
        cpu, wall, answers, completion = cpu_seconds(process.pid), time.perf_counter(), [], 0
        for messages in prompts:
            response = httpx.post(f"{base_url}/chat/completions", timeout=600,
                                  json={"messages": messages, **parameters})
            response.raise_for_status()
            body = response.json()
            answers.append(body["choices"][0]["message"]["content"])
            completion += body["usage"]["completion_tokens"]
        wall, cpu = time.perf_counter() - wall, cpu_seconds(process.pid) - cpu
        text = log_path.read_bytes()[log_start:].decode(errors="replace")
        evaluated = sum(int(n) for _, n in PROMPT_EVAL.findall(text))
        return {"wall": wall, "cpu": cpu, "evaluated": evaluated, "completion": completion, "answers": answers}
    finally:
        process.terminate()
        process.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    dumping = sub.add_parser("dump")
    dumping.add_argument("--config", type=Path, default=REPO / "configs" / "wiki.yaml")
    dumping.add_argument("--out", type=Path, default=DEFAULT_PROMPTS)
    replaying = sub.add_parser("replay")
    replaying.add_argument("--prompts", type=Path, default=DEFAULT_PROMPTS)
    replaying.add_argument("--start", type=int, default=0)
    replaying.add_argument("--first", type=int, default=12)
    replaying.add_argument("--rounds", type=int, default=2)
    replaying.add_argument("--settings", nargs="+", choices=list(SETTINGS), default=["default", "logits-all-on"])
    args = parser.parse_args()
    if args.command == "dump":
        dump(args.config, args.out)
        return
    data = json.loads(args.prompts.read_text())
    prompts = data["prompts"][args.start:args.start + args.first]
    print(f"{len(prompts)} main-job prompts from #{args.start}, {args.rounds} rounds, settings alternating; "
          f"load average before: {os.getloadavg()[0]:.1f}", flush=True)
    results: dict[str, list[dict]] = {name: [] for name in args.settings}
    with tempfile.TemporaryDirectory() as directory:
        for round_ in range(args.rounds):
            for name in args.settings:
                r = replay(name, prompts, data["parameters"], Path(directory))
                results[name].append(r)
                same = sum(a == b for a, b in zip(r["answers"], results[args.settings[0]][0]["answers"]))
                print(f"  round {round_ + 1} {name:>24}: wall {r['wall']:7.1f} s  server cpu {r['cpu']:7.1f} s  "
                      f"prompt tokens evaluated {r['evaluated']:6d}  generated {r['completion']:5d}  "
                      f"answers equal to {args.settings[0]}'s: {same}/{len(prompts)}  (load {os.getloadavg()[0]:.1f})",
                      flush=True)
    base = results[args.settings[0]]
    for name in args.settings[1:]:
        wall = sum(r["wall"] for r in results[name]) / sum(r["wall"] for r in base)
        cpu = sum(r["cpu"] for r in results[name]) / sum(r["cpu"] for r in base)
        print(f"{name} / {args.settings[0]}: wall {wall:.3f}, server cpu {cpu:.3f}")


if __name__ == "__main__":
    main()
