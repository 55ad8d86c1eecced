"""The ``rerank`` method with the ``endpoint`` reranker against the stand-in server's ``/v1/rerank``.

Oracle: the stand-in's documented score (:func:`rag.testing.stand_in.overlap_score`, the share of the
query's words a document holds) and the documented tie rule (float32 score descending, then the
input's rank), applied here by hand to the input lists; the input lists are served as the runner
serves them (:class:`rag.runner.retrieval.ServedRankings`)."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rag.errors import BenchError, ConfigError
from rag.retrievers import IndexStorage, build_retriever
from rag.retrievers.base import RetrieverParams
from rag.runner.retrieval import CachedRanking, ServedRankings
from rag.testing import StandInServer, StandInSettings
from rag.testing.stand_in import overlap_score
from rag.types import Chunk

WORDS = ["lava", "ash", "planet", "sun", "violin", "ice", "coffee", "bird", "crust", "ring"]
FAST = {"timeout_s": 1.0, "max_retries": 2, "backoff": {"initial_s": 0.01, "max_s": 0.02}}


@pytest.fixture(scope="module")
def stand_in():
    with StandInServer(StandInSettings(slow_s=2.0, retry_after="0")) as server:
        yield server


def reranked(base_url, texts, served, queries, k, depth=50, **reranker):
    """The rerank method over ``served`` ({query: input ranking}), searched for ``queries`` to ``k``."""
    method = build_retriever("rr", "rerank", {"input": "first", "depth": depth, "reranker": {
        "type": "endpoint", "model": "stand-in", "base_url": base_url, "api_key_env": "RAG_TEST_NO_SUCH_VAR",
        **FAST, **reranker}})
    method.bind({"first": ServedRankings("first", RetrieverParams(), served)})
    method.index([Chunk(i, i, f"u/{i}", text, 0, 0) for i, text in texts.items()], IndexStorage.under("/nonexistent", "rr"))
    return method.search(queries, k)


def expected_order(query, ids, texts):
    """The documented order, by hand: float32 overlap score descending, then the input's rank."""
    return sorted(ids, key=lambda i: (-np.float32(overlap_score(query, texts[i])), ids.index(i)))


texts_strategy = st.dictionaries(st.from_regex(r"c[0-9]{1,3}", fullmatch=True),
                                 st.lists(st.sampled_from(WORDS), min_size=0, max_size=6).map(" ".join),
                                 min_size=1, max_size=12)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=texts_strategy, data=st.data(), k=st.integers(1, 15), depth=st.integers(1, 15))
def test_rerank_orders_exactly_the_inputs_top_depth_by_the_stand_ins_scores(stand_in, texts, data, k, depth):
    ids = data.draw(st.permutations(sorted(texts)))
    query = " ".join(data.draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=4)))
    served = {query: CachedRanking(list(ids), [float(-r) for r in range(len(ids))], 0.0)}
    [ranking] = reranked(stand_in.base_url, texts, served, [query], k, depth=depth)
    top = list(ids[:depth])
    assert set(ranking.chunk_ids) <= set(top) and len(set(ranking.chunk_ids)) == len(ranking.chunk_ids)
    assert len(ranking.chunk_ids) == min(k, len(top))  # nothing added; nothing dropped but the cut to k
    assert ranking.chunk_ids == expected_order(query, top, texts)[:k]
    assert ranking.scores == [float(np.float32(overlap_score(query, texts[i]))) for i in ranking.chunk_ids]
    assert (ranking.llm_calls, ranking.llm_tokens) == (1, len(query.split()) + sum(len(texts[i].split()) for i in top))


def test_ties_keep_the_inputs_order_and_a_short_input_is_reranked_whole(stand_in):
    texts = {"a": "lava", "b": "lava", "c": "ice", "d": "lava ash"}
    served = {"lava ash": CachedRanking(["c", "a", "b", "d"], [4.0, 3.0, 2.0, 1.0], 0.0),
              "nothing": CachedRanking([], [], 0.0)}
    first, empty = reranked(stand_in.base_url, texts, served, ["lava ash", "nothing"], k=100, depth=50)
    # d holds both words (1.0); a and b one of two (0.5, a tie: the input ranked a above b, which the
    # id rule alone would put first); c none
    assert first.chunk_ids == ["d", "a", "b", "c"] and first.scores == [1.0, 0.5, 0.5, 0.0]
    assert empty.chunk_ids == [] and empty.llm_calls == 0


def digest(text):
    return hashlib.sha256(text.encode()).hexdigest()


@pytest.mark.parametrize("faults, attempts", [("error_500,ok", 2), ("rate_limit_429,ok", 2), ("drop_connection,ok", 2),
                                              ("malformed_json,ok", 2), ("empty_choices,ok", 2), ("slow,ok", 2),
                                              ("error_503,error_500,ok", 3)])
def test_retryable_faults_are_retried_and_each_attempt_is_counted(stand_in, faults, attempts):
    query = f"lava ash [[faults:{faults}]]"
    texts = {"a": "lava", "b": "ash crust lava"}
    [ranking] = reranked(stand_in.base_url, texts, {query: CachedRanking(["a", "b"], [2.0, 1.0], 0.0)}, [query], k=5)
    assert ranking.chunk_ids == expected_order(query, ["a", "b"], texts)
    assert ranking.llm_calls == attempts == stand_in.stats.attempts_by_prompt[digest(query)]


@pytest.mark.parametrize("faults, kind, attempts", [("error_500", "server_error", 3), ("bad_request_400", "client_error", 1)])
def test_a_question_failing_for_good_stops_with_one_line(stand_in, faults, kind, attempts):
    query = f"ice {faults} [[faults:{faults}]]"
    with pytest.raises(BenchError) as caught:
        reranked(stand_in.base_url, {"a": "ice"}, {query: CachedRanking(["a"], [1.0], 0.0)}, [query], k=5)
    assert f"retrievers.rr.params.reranker: {stand_in.base_url}/rerank (model 'stand-in'): {kind}" in str(caught.value)
    assert f"gave up after {attempts} attempt(s)" in str(caught.value) and "\n" not in str(caught.value)
    assert stand_in.stats.attempts_by_prompt[digest(query)] == attempts


def test_the_key_is_sent_but_never_echoed(monkeypatch, stand_in):
    key = "sk-rerank-test-0123456789abcdef"
    monkeypatch.setenv("RAG_TEST_RERANK_KEY", key)
    query = "lava [[faults:echo_auth_500]]"
    with pytest.raises(BenchError) as caught:
        reranked(stand_in.base_url, {"a": "lava"}, {query: CachedRanking(["a"], [1.0], 0.0)}, [query], k=5,
                 api_key_env="RAG_TEST_RERANK_KEY", max_retries=0)
    assert "server_error" in str(caught.value) and key not in str(caught.value)


def test_the_preflight_names_the_key_at_fault(unused_port_url):
    with pytest.raises(BenchError, match=r"^retrievers\.rr\.params\.reranker\.base_url: .*/rerank does not answer"):
        reranked(unused_port_url, {"a": "x"}, {"q": CachedRanking(["a"], [1.0], 0.0)}, ["q"], k=5)


@pytest.fixture
def unused_port_url():
    from rag.generation.local_server import free_port

    return f"http://127.0.0.1:{free_port()}/v1"


@pytest.mark.parametrize("params, key, says", [
    ({"input": "bm25", "reranker": {"type": "endpoint", "model": "m", "base_url": "http://127.0.0.1:1", "top": 3}},
     "retrievers.rr.params.reranker.top", "unknown key"),
    ({"input": "bm25", "reranker": {"type": "monot5"}}, "retrievers.rr.params.reranker", "unknown reranker type 'monot5'"),
    ({"input": "bm25", "reranker": {"type": "endpoint", "model": "m"}}, "retrievers.rr.params.reranker.base_url",
     "missing required key"),
    ({"input": "bm25", "depth": 0, "reranker": {"type": "endpoint", "model": "m", "base_url": "http://127.0.0.1:1"}},
     "retrievers.rr.params.depth", "greater than 0"),
    ({"reranker": {"type": "endpoint", "model": "m", "base_url": "http://127.0.0.1:1"}}, "retrievers.rr.params.input",
     "missing required key"),
])
def test_bad_settings_are_one_line_naming_the_key(params, key, says):
    with pytest.raises(ConfigError) as caught:
        build_retriever("rr", "rerank", params)
    assert caught.value.key == key and says in str(caught.value) and "\n" not in str(caught.value)


# issue 44: scores beyond float32 (1e39 became inf: a ValueError in count_ties_crossing), scores that
# differ only below float32's resolution (all became 0.0: the input's order stood under the rerank's
# name) and a JSON integer of 400 digits (OverflowError) each gave a traceback or a stand-in ranking
@pytest.mark.parametrize("results, says", [
    ('[{"index": 0, "relevance_score": 1e39}, {"index": 1, "relevance_score": 0.5}]',
     "endpoint reranker: a score is not a finite number within float32's range"),
    ('[{"index": 0, "relevance_score": 1e-50}, {"index": 1, "relevance_score": 2e-50}]',
     "endpoint reranker: the 2 scores differ only below float32's resolution (all round to 0.0)"),
])
def test_scores_that_cannot_order_the_candidates_fail_the_questions_stage(stand_in, results, says):
    query = f"ice [[results:{results}:results]]"
    served = {query: CachedRanking(["a", "b"], [2.0, 1.0], 0.0), "ice ash": CachedRanking(["a", "b"], [2.0, 1.0], 0.0)}
    failed, fine = reranked(stand_in.base_url, {"a": "ice", "b": "ice ash"}, served, [query, "ice ash"], k=5)
    assert failed.chunk_ids == [] and failed.failed.startswith(says) and failed.llm_calls == 1
    assert fine.chunk_ids == ["b", "a"] and not fine.failed


def test_an_integer_of_400_digits_is_one_line_in_a_question_and_in_the_preflight():
    huge = "9" * 400
    query = f'ice [[results:[{{"index": 0, "relevance_score": {huge}}}]:results]]'
    with StandInServer(StandInSettings(retry_after="0")) as server:
        with pytest.raises(BenchError) as caught:
            reranked(server.base_url, {"a": "ice"}, {query: CachedRanking(["a"], [1.0], 0.0)}, [query], k=5, max_retries=0)
        assert "malformed_response: a result is not {index, relevance_score}" in str(caught.value)
        assert "\n" not in str(caught.value)
        server.settings.rerank_results = f'[{{"index": 0, "relevance_score": {huge}}}]'
        with pytest.raises(BenchError) as caught:
            reranked(server.base_url, {"a": "ice"}, {"ice": CachedRanking(["a"], [1.0], 0.0)}, ["ice"], k=5)
        assert "did not answer in the /rerank shape" in str(caught.value) and "\n" not in str(caught.value)


def test_an_answer_over_its_size_cap_stops_reading_with_one_line_naming_the_cap(stand_in):
    query = "ice [[pad:2000000]]"  # 2 MB of padding in the answer
    with pytest.raises(BenchError) as caught:
        reranked(stand_in.base_url, {"a": "ice"}, {query: CachedRanking(["a"], [1.0], 0.0)}, [query], k=5)
    assert "response_too_large: the /rerank answer exceeds the cap of 1,048,582 bytes for 1 documents" in str(caught.value)
    assert "gave up after 1 attempt(s)" in str(caught.value) and "\n" not in str(caught.value)
