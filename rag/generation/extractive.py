"""The extractive baseline: no LLM, the answer is the best-matching sentence of the retrieved chunks.

Every sentence of the top ``max_chunks`` chunks is a "document" and the question the query; the
score is Okapi BM25 with Lucene's non-negative idf (Robertson & Zaragoza 2009; Lucene
``BM25Similarity``), over binary query terms (a question rarely repeats a word)::

    idf(t)      = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))
    score(q, s) = sum_{t in set(q)} idf(t) * tf(t, s) * (k1 + 1) / (tf(t, s) + k1 * (1 - b + b * |s| / avgdl))

with N the number of sentences, df(t) the sentences containing t, |s| the sentence length in tokens
and avgdl the mean length. Sentences come from the splitter that chunking and the question
generators use (:func:`rag.text.sentences.split_sentences`). Tokens are lower-cased ``\\w+`` runs;
common words get a low idf by themselves, so no stop-word list is needed. Ties go to the
higher-ranked chunk, then the earlier sentence, so the result is deterministic. No context (or no sentence) gives the empty answer "".
"""

from __future__ import annotations

import math
import re
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from rag.text.sentences import split_sentences
from rag.generation.base import GENERATORS, GenerationRequest, GenerationResult, Generator, ProgressCallback
from rag.generation.config import ExtractiveGeneratorConfig

TOKEN = re.compile(r"\w+")


def tokenize(text: str) -> list[str]:
    return TOKEN.findall(text.lower())


def bm25_sentence_scores(question: str, sentences: Sequence[str], k1: float, b: float) -> list[float]:
    """BM25 score of each sentence for the question (formula in the module docstring)."""
    docs = [Counter(tokenize(sentence)) for sentence in sentences]
    if not docs:
        return []
    lengths = [sum(doc.values()) for doc in docs]
    avgdl = sum(lengths) / len(docs) or 1.0
    n_docs = len(docs)
    scores = [0.0] * n_docs
    for term in set(tokenize(question)):
        df = sum(1 for doc in docs if term in doc)
        if df == 0:
            continue
        idf = math.log(1 + (n_docs - df + 0.5) / (df + 0.5))
        for i, doc in enumerate(docs):
            tf = doc.get(term, 0)
            if tf:
                scores[i] += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * lengths[i] / avgdl))
    return scores


@GENERATORS.register("extractive")
class ExtractiveGenerator(Generator):
    def __init__(self, config: ExtractiveGeneratorConfig):
        self.config = config

    @classmethod
    def from_config(cls, config: ExtractiveGeneratorConfig, cache_dir: Path | None = None) -> "ExtractiveGenerator":
        return cls(config)  # nothing to cache: it is cheaper than a cache lookup

    def answer(self, question: str, contexts: Sequence[str]) -> str:
        sentences = [s for chunk in contexts[: self.config.max_chunks] for s in split_sentences(chunk)]
        scores = bm25_sentence_scores(question, sentences, self.config.k1, self.config.b)
        if not scores:
            return ""
        best = max(range(len(scores)), key=lambda i: (scores[i], -i))
        return sentences[best]

    def generate(
        self, requests: Sequence[GenerationRequest], on_result: ProgressCallback | None = None
    ) -> list[GenerationResult]:
        results = []
        for request in requests:
            started = time.perf_counter()
            answer = self.answer(request.question, request.contexts)
            result = GenerationResult(key=request.key, answer=answer, latency_s=time.perf_counter() - started,
                                      attempts=1, extra={"chunks_used": len(request.contexts[: self.config.max_chunks])})
            results.append(result)
            if on_result is not None:
                on_result(result)
        return results
