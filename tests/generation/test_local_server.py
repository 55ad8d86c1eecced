"""End to end against the real managed llama.cpp server with the packaged SmolLM2-135M-Instruct."""

import os
import re
import signal
from collections import Counter

import httpx
import pytest

from rag.generation import GenerationRequest, LocalGeneratorConfig, build_generator
from rag.generation.local_server import ManagedLlamaServer
from rag.models import smollm2_gguf_path

pytestmark = pytest.mark.slow

QUESTIONS = [
    ("What is the capital of France?", "Paris",
     ["Paris is the capital and largest city of France.", "Berlin is the capital of Germany."]),
    ("Who wrote the play Hamlet?", "William Shakespeare",
     ["Hamlet is a tragedy written by William Shakespeare around 1600."]),
    ("At what temperature does water boil at sea level?", "100 degrees Celsius",
     ["At sea level, water boils at 100 degrees Celsius."]),
    ("In which year did the Berlin Wall fall?", "1989",
     ["The Berlin Wall fell on 9 November 1989, after weeks of protests."]),
    ("What is the largest planet in the Solar System?", "Jupiter",
     ["Jupiter is the largest planet in the Solar System, a gas giant."]),
]


def token_f1(prediction: str, reference: str) -> float:
    """SQuAD-style token F1 (lower-cased word tokens, multiset overlap); written here as an oracle."""
    pred, ref = re.findall(r"\w+", prediction.lower()), re.findall(r"\w+", reference.lower())
    common = sum((Counter(pred) & Counter(ref)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(pred), common / len(ref)
    return 2 * precision * recall / (precision + recall)


def requests():
    return [GenerationRequest(f"q{i}", q, ctx) for i, (q, _, ctx) in enumerate(QUESTIONS)]


def config(**overrides):
    return LocalGeneratorConfig(max_tokens=40, n_ctx=1024, **overrides)


def models_answer(base_url: str) -> bool:
    try:
        return httpx.get(f"{base_url}/models", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def assert_stopped(pid: int) -> None:
    with pytest.raises(ProcessLookupError):
        os.killpg(pid, 0)  # the whole process group is gone


def test_smollm2_answers_from_context_and_the_server_is_stopped(tmp_path, monkeypatch):
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    monkeypatch.delenv("GOMP_SPINCOUNT", raising=False)
    with build_generator(config(), tmp_path) as generator:
        pid, base_url = generator.server.pid, generator.server.base_url
        assert models_answer(base_url)
        environment = open(f"/proc/{pid}/environ", "rb").read().split(b"\0")
        assert b"OMP_WAIT_POLICY=PASSIVE" in environment and b"GOMP_SPINCOUNT=3000" in environment  # spin briefly, then sleep
        command = open(f"/proc/{pid}/cmdline", "rb").read().decode().split("\0")
        assert command[command.index("--flash_attn") + 1] == "True"
        assert command[command.index("--logits_all") + 1] == "False"  # llama-cpp-python's server says True
        assert command[command.index("--extra_buffer_types") + 1] == "off"  # the default (docs/generation.md)
        assert generator.server.self_check == "ok"
        results = generator.generate(requests())
    assert_stopped(pid)
    assert not models_answer(base_url)
    assert all(r.answer and not r.failed for r in results), results
    f1 = [token_f1(r.answer, gold) for r, (_, gold, _) in zip(results, QUESTIONS)]
    assert sum(score > 0 for score in f1) >= 4, list(zip([r.answer for r in results], f1))
    assert all(r.prompt_tokens > 0 and r.completion_tokens > 0 and r.latency_s > 0 for r in results)


def test_the_server_is_stopped_when_generate_raises(tmp_path):
    def boom(result):
        raise RuntimeError("callback failed")

    with pytest.raises(RuntimeError, match="callback failed"):
        with build_generator(config(), tmp_path) as generator:
            pid = generator.server.pid
            generator.generate(requests()[:1], on_result=boom)
    assert_stopped(pid)


def test_a_server_dying_mid_run_is_restarted_and_the_run_finishes(tmp_path):
    """Two questions: the first answer's callback kills the server, so the second (concurrency 1)
    meets the dead server, is retried after the restart and answered; more questions would only be
    answered by the restarted server, as the first test's are by a fresh one."""
    killed = []
    asked = requests()[:2]

    with build_generator(config(max_retries=3, backoff={"initial_s": 0.2}), tmp_path) as generator:
        def kill_once(result):
            if not killed:
                killed.append(generator.server.pid)
                os.killpg(generator.server.pid, signal.SIGKILL)

        results = generator.generate(asked, on_result=kill_once)
        restarted_pid = generator.server.pid
    assert generator.restarts == 1 and restarted_pid != killed[0]
    assert [r.key for r in results] == [r.key for r in asked]
    assert all(r.answer for r in results), results
    assert any(r.attempts > 1 for r in results)  # the question in flight saw the dead server
    assert_stopped(restarted_pid)


@pytest.mark.parametrize("extra_buffer_types", [False, True])
def test_the_extra_buffer_types_setting_reaches_llama_cpp(tmp_path, extra_buffer_types):
    """llama.cpp's own load log: with the extra buffer types on it considers them for every weight
    (``CPU_REPACK`` where the CPU has repacked kernels, ``AMX`` where it has AMX), with them off never."""
    log_path = tmp_path / "server.log"
    server = ManagedLlamaServer(smollm2_gguf_path(), log_path, model_alias="smollm2", n_ctx=512, verbose=True,
                                extra_buffer_types=extra_buffer_types)
    with server:
        assert server.self_check == "ok"
    log = log_path.read_text(errors="replace")
    assert "load_tensors:" in log  # llama.cpp's load log is there
    considered = re.search(r"preferred buffer type (CPU_REPACK|AMX)|(CPU_REPACK|AMX) model buffer size", log)
    offered = re.search(r"REPACK = 1|AMX_INT8 = 1", log)  # llama.cpp's system info: this build has one
    if not extra_buffer_types:
        assert not considered, considered
    elif offered:
        assert considered, log[-3000:]


class LogitsForEveryToken(ManagedLlamaServer):
    """The managed server with llama-cpp-python's own default, ``logits_all`` on."""

    def settings(self):
        return {**super().settings(), "logits_all": True}


def greedy_answers(server: ManagedLlamaServer) -> tuple[list[str], int]:
    """Greedy answers to the questions, each context repeated to a prompt of a one to two hundred tokens, and
    the HTTP status of a request for ``logprobs`` (which needs every token's logits)."""
    answers = []
    with server:
        for question, _, contexts in QUESTIONS:
            context = "\n\n".join(f"[{i + 1}] {c}" for i, c in enumerate(contexts * 8))
            response = httpx.post(f"{server.base_url}/chat/completions", timeout=300, json={
                "messages": [{"role": "user", "content": f"Context:\n{context}\n\nQuestion: {question}\nAnswer:"}],
                "max_tokens": 16, "temperature": 0.0, "seed": 0})
            response.raise_for_status()
            answers.append(response.json()["choices"][0]["message"]["content"])
        probe = httpx.post(f"{server.base_url}/completions", timeout=300,
                           json={"prompt": "Paris is", "max_tokens": 1, "logprobs": 1})
    return answers, probe.status_code


def test_logits_for_the_sampled_token_only_give_the_same_answers(tmp_path):
    """``logits_all`` off (ours) against llama-cpp-python's default (on): the same greedy answers on
    prompts of one to two hundred tokens; a ``logprobs`` request is refused by ours and answered by the
    default, so the setting reached the server."""
    ours, ours_probe = greedy_answers(
        ManagedLlamaServer(smollm2_gguf_path(), tmp_path / "ours.log", model_alias="smollm2", n_ctx=2048))
    default, default_probe = greedy_answers(
        LogitsForEveryToken(smollm2_gguf_path(), tmp_path / "default.log", model_alias="smollm2", n_ctx=2048))
    assert ours == default
    assert all(answer.strip() for answer in ours), ours
    assert default_probe == 200 and ours_probe >= 400, (default_probe, ours_probe)
