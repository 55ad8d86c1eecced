"""HyDE and multi-query with the real managed llama.cpp server and the packaged SmolLM2-135M-Instruct
(the offline default), one question each: what the model wrote is read back from the stage's
generation cache, and the results are recomputed from it here (MiniLM itself, ranx's RRF).

Both tests only need answers from the server, not its lifecycle (tests/generation/test_local_server.py
checks that): the stages' generators are the ordinary :class:`LocalGenerator` over one managed server,
started once for the module (a start is about 3 s on 2 cores)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from ranx import Run, fuse

from rag.generation import LocalGenerator, LocalGeneratorConfig
from rag.generation.local_server import ManagedLlamaServer
from rag.models import smollm2_gguf_path
from rag.retrievers.query_transforms.multi_query import paraphrases
from rag.retrievers import IndexStorage, build_retriever
from rag.services import StageServices
from rag.retrievers.dense import DenseParams, DenseRetriever

pytestmark = pytest.mark.slow  # starts the real llama.cpp server, loads the real embedding model

TEXTS = {
    "paris": "Paris is the capital and largest city of France, on the Seine.",
    "tokyo": "Tokyo is the capital of Japan and its most populous city.",
    "cats": "Cats are small domesticated carnivorous mammals kept as pets.",
    "python": "Python is a high-level general-purpose programming language.",
    "volcano": "A volcano is a rupture in the crust where lava and ash escape.",
    "jupiter": "Jupiter is the largest planet in the Solar System, a gas giant.",
}


DEFAULT = LocalGeneratorConfig(n_ctx=1024)


class ModuleServer(ManagedLlamaServer):
    """The managed server, left running when a stage's generator closes; stopped when the module ends."""

    def stop(self, grace_s: float = 10.0) -> None:
        pass

    def stop_for_good(self) -> None:
        super().stop()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    shared = ModuleServer(smollm2_gguf_path(), tmp_path_factory.mktemp("llama") / "llama_server.log",
                          model_alias=DEFAULT.model, n_ctx=DEFAULT.n_ctx, n_threads=DEFAULT.n_threads,
                          startup_timeout_s=DEFAULT.startup_timeout_s, extra_buffer_types=DEFAULT.extra_buffer_types)
    try:
        shared.start()
        yield shared
    finally:
        shared.stop_for_good()


@pytest.fixture
def services(server, tmp_path) -> StageServices:
    def on_the_module_server(config, cache_dir) -> LocalGenerator:
        # the server's own settings are the default config's; a stage changes only its requests
        assert isinstance(config, LocalGeneratorConfig) and config.n_ctx == server.n_ctx and config.top_logprobs is None
        return LocalGenerator(config, cache_dir, server)

    return StageServices(generator_factory=on_the_module_server, cache_dir=tmp_path, default_generator=DEFAULT)


def replies(tmp_path, method: str) -> list[dict]:
    path = tmp_path / "stages" / method / "generations.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_hyde_with_smollm2(minilm, make_chunks, services, tmp_path):
    question = "What is the largest planet in the Solar System?"
    retriever = DenseRetriever("hyde", DenseParams(search="exact", query={"type": "hyde"}), encoder=minilm)
    retriever.index(make_chunks(TEXTS), IndexStorage.under(tmp_path, "hyde"))
    retriever.use(services)
    [ranking] = retriever.search([question], k=6)
    [record] = replies(tmp_path, "hyde")
    assert record["answer"].strip() and 0 < record["completion_tokens"] <= 96
    vectors = minilm.encode([question, record["answer"]], convert_to_numpy=True).astype(np.float64)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    mean = vectors.mean(axis=0)
    documents = minilm.encode(list(TEXTS.values()), convert_to_numpy=True).astype(np.float64)
    cosine = documents / np.linalg.norm(documents, axis=1, keepdims=True) @ (mean / np.linalg.norm(mean))
    ids = list(TEXTS)
    assert ranking.chunk_ids == [ids[i] for i in np.argsort(-cosine, kind="stable")]
    assert ranking.scores == pytest.approx(sorted(cosine, reverse=True), abs=1e-5)
    assert ranking.llm_calls == 1 and ranking.llm_tokens == record["prompt_tokens"] + record["completion_tokens"]


def test_multi_query_with_smollm2(make_chunks, services, tmp_path):
    question = "Which city is the capital of Japan?"
    retriever = build_retriever("mq", "bm25", {"query": {"type": "multi_query"}})
    retriever.index(make_chunks(TEXTS), IndexStorage.under(tmp_path, "mq"))
    retriever.use(services)
    [ranking] = retriever.search([question], k=6)
    [record] = replies(tmp_path, "mq")
    lines = paraphrases(record["answer"], question, 3)
    lists = retriever.search_plain([question, *lines], 6)
    runs = [Run({"q": {c: float(len(r.chunk_ids) - i) for i, c in enumerate(r.chunk_ids)}}, name=f"r{n}")
            for n, r in enumerate(lists) if r.chunk_ids]
    expected = fuse(runs, method="rrf", params={"k": 60}).to_dict()["q"] if len(runs) > 1 else \
        {c: 1 / (61 + i) for i, c in enumerate(lists[0].chunk_ids)}
    assert ranking.scores == pytest.approx([expected[c] for c in ranking.chunk_ids], rel=1e-6)
    assert ranking.chunk_ids[0] == "tokyo"
    assert ranking.llm_calls == 1 and ranking.llm_tokens == record["prompt_tokens"] + record["completion_tokens"]
