"""The ``llm`` reranker: against the stand-in (no log-probs: the parsed answer; scripted replies and
faults) and against the real local llama.cpp server with SmolLM2 (log-probs), through the generator
machinery and its cache."""

from __future__ import annotations

import json
import math

import pytest

from rag.errors import BenchError
from rag.generation import LocalGeneratorConfig, OpenAIGeneratorConfig, build_generator
from rag.rerankers import RERANKERS, Candidate
from rag.services import StageServices
from rag.testing import StandInServer, StandInSettings


def reranker(services, **params):
    cls = RERANKERS.get("llm")
    return cls(cls.Params.model_validate({"type": "llm", **params}), services, method="llm_rerank")


def stand_in_services(server, tmp_path):
    generator = OpenAIGeneratorConfig(model="stand-in", base_url=server.base_url, api_key_env="RAG_TEST_NO_SUCH_VAR",
                                      timeout_s=1.0, max_retries=2, backoff={"initial_s": 0.01, "max_s": 0.02})
    return StageServices(build_generator, generator, tmp_path)


def test_without_log_probs_the_parsed_answer_scores_and_faults_are_retried(tmp_path):
    passages = ['[[reply:"Yes."]] lava', '[[reply:"no"]] ice',
                '[[reply:"YES"]] [[faults:error_500,rate_limit_429,ok]] crust']
    with StandInServer(StandInSettings(retry_after="0")) as server:
        [scored] = reranker(stand_in_services(server, tmp_path), logprobs=False).score(
            ["Which lava?"], [[Candidate(f"c{i}", text) for i, text in enumerate(passages)]])
        assert server.stats.completions_requests == 3 + 2  # one fault-free request each, two retries
    assert scored.scores == [1.0, 0.0, 1.0] and not scored.failed
    assert scored.llm_calls == 3 and scored.llm_tokens > 0
    assert (tmp_path / "stages" / "llm_rerank").is_dir()  # the stage's own generation cache


def cached_records(tmp_path) -> list[dict]:
    return [json.loads(line) for path in (tmp_path / "stages").rglob("*.jsonl") for line in path.read_text().splitlines()]


# issue 44: an answer without a usable score was scored 0.5 or 1.0 (the input's order stood under the
# rerank's name); log-probs NaN, Infinity, 1000, "high" or of 400 digits gave a traceback or were
# used (and NaN was cached and replayed)
@pytest.mark.parametrize("passage, logprobs, says", [
    ('[[reply:"Perhaps"]] ash', False, "neither yes nor no"),
    ('[[reply:"Yes"]] ash', True, "carries no top_logprobs"),
    ('[[logprobs:[{"token": "yes", "logprob": NaN}]:logprobs]] ash', True, "not a number in (-inf, 0]: nan"),
    ('[[logprobs:[{"token": "yes", "logprob": Infinity}]:logprobs]] ash', True, "(-inf, 0]: inf"),
    ('[[logprobs:[{"token": "yes", "logprob": -Infinity}]:logprobs]] ash', True, "(-inf, 0]: -inf"),
    ('[[logprobs:[{"token": "yes", "logprob": 1000}]:logprobs]] ash', True, "(-inf, 0]: 1000"),
    ('[[logprobs:[{"token": "yes", "logprob": 148.5}]:logprobs]] ash', True, "(-inf, 0]: 148.5"),
    ('[[logprobs:[{"token": "yes", "logprob": "high"}]:logprobs]] ash', True, "(-inf, 0]: 'high'"),
    ('[[logprobs:[{"token": "yes", "logprob": ' + "9" * 400 + '}]:logprobs]] ash', True, "an integer of 400 digits"),
    ('[[logprobs:[{"token": 7, "logprob": -1}]:logprobs]] ash', True, "(-inf, 0]"),
    ('[[pad:5000]] ash', True, "a reply of 5032 characters, over the cap of 1192"),
])
def test_a_reply_without_a_usable_score_fails_the_questions_stage_and_nothing_invalid_is_cached(
        tmp_path, passage, logprobs, says):
    good = '[[reply:"Yes"]] [[logprobs:[{"token": "Yes", "logprob": -0.5}, {"token": " yes", "logprob": -2}]:logprobs]] lava'
    with StandInServer(StandInSettings(retry_after="0")) as server:
        rerank = reranker(stand_in_services(server, tmp_path), logprobs=logprobs)
        bad, fine = rerank.score(["Which lava?", "Which rock?"], [[Candidate("a", good), Candidate("b", passage)],
                                                                  [Candidate("c", good)]])
        assert server.stats.completions_requests == 3  # a malformed reply is not retried
    assert bad.scores == [] and says in bad.failed and bad.failed.startswith("llm reranker: ") and bad.llm_calls == 2
    assert not fine.failed and fine.scores == [pytest.approx(math.exp(-0.5) + math.exp(-2)) if logprobs else 1.0]
    records = cached_records(tmp_path)  # the good replies (and a reply that parsed)
    assert all(record["top_logprobs"] in ({"Yes": -0.5, " yes": -2.0}, None) for record in records)
    assert len(records) == (2 if says.startswith(("(-inf", "not a number", "an integer", "a reply of")) or
                            "(-inf" in says else 3)


def test_a_cached_record_with_invalid_log_probs_is_not_replayed(tmp_path):
    from rag.generation.cache import GenerationCache
    directory = tmp_path / "cache"
    directory.mkdir()
    cache = GenerationCache(directory)
    cache.path.write_text(json.dumps({"key": "k", "answer": "yes", "prompt_tokens": 1, "completion_tokens": 1,
                                      "latency_s": 0.1, "attempts": 1, "top_logprobs": {"yes": math.nan}}) + "\n")
    assert GenerationCache(directory).get("k") is None


def test_a_request_failing_for_good_stops_with_one_line(tmp_path):
    with StandInServer(StandInSettings(retry_after="0")) as server:
        with pytest.raises(BenchError) as caught:
            reranker(stand_in_services(server, tmp_path)).score(["q?"], [[Candidate("a", "x [[faults:error_500]]")]])
    assert str(caught.value).startswith("retrievers.llm_rerank.params.reranker: a relevance request failed for good "
                                        "(server_error")
    assert "\n" not in str(caught.value)


@pytest.mark.slow
def test_the_local_smollm2_scores_by_the_log_prob_of_yes(tmp_path):
    """The real llama.cpp server: each score is the probability of a "yes" first token, summed over
    the alternatives the server listed; checked against the log-probs stored in the generation cache."""
    services = StageServices(build_generator, LocalGeneratorConfig(n_threads=2), tmp_path)
    candidates = [Candidate("saturn", "Saturn is the sixth planet from the Sun and the second largest planet."),
                  Candidate("espresso", "Espresso is a coffee beverage brewed by forcing hot water through coffee.")]
    [scored] = reranker(services).score(["Which is the sixth planet from the Sun?"], [candidates])
    assert scored.llm_calls == 2 and scored.llm_tokens > 0
    records = [json.loads(line) for line in next((tmp_path / "stages" / "llm_rerank").rglob("*.jsonl")).read_text().splitlines()]
    assert len(records) == 2 and all(record["top_logprobs"] for record in records)
    by_yes = sorted(sum(math.exp(lp) for token, lp in record["top_logprobs"].items() if token.strip().lower() == "yes")
                    for record in records)
    assert sorted(scored.scores) == pytest.approx(by_yes)
    assert all(0.0 <= score < 1.0 for score in scored.scores)
