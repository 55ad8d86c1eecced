"""The per-query table, declared once: one row per question x method.

Identity and content columns, then one column per retrieval metric (URL level plain, chunk level
prefixed ``chunk:``), then the answer columns. Readers use these names, never string literals.
"""

from __future__ import annotations

from evaluation.answers import ANSWER_METRICS as _ENGINE_ANSWER_METRICS

QUESTION_SET, METHOD, QID, QTYPE, QUESTION = "question_set", "method", "qid", "qtype", "question"
GOLD_URLS, RETRIEVED_URLS, RETRIEVED_CHUNKS = "gold_urls", "retrieved_urls", "retrieved_chunks"
GOLD_URL_RANKS, GOLD_CHUNK_RANKS, RETRIEVAL_MS = "gold_url_ranks", "gold_chunk_ranks", "retrieval_ms"
REFERENCE, ANSWER, ERROR, GENERATION_STATUS = "reference", "answer", "error", "generation_status"
GENERATION_S, PROMPT_TOKENS, COMPLETION_TOKENS, ATTEMPTS = "generation_s", "prompt_tokens", "completion_tokens", "attempts"
CHUNKS_USED = "chunks_used"  # chunks that fitted the prompt
#: LLM or model-endpoint requests a method's retrieval sent for the question (query transforms,
#: rerankers; its inputs' included) and their prompt + completion tokens: rag.types.Ranking.
LLM_CALLS, LLM_TOKENS = "llm_calls", "llm_tokens"
#: The timing noise of the method's ``retrieval_ms`` (ms; the same for all its questions; NaN: not
#: measured): rag/runner/costs.py. The recommendation's cost tie-break reads it.
RETRIEVAL_MS_NOISE = "retrieval_ms_noise"
#: Why a stage of the method (a query transform, a reranker) gave nothing usable for the question
#: ("" when it did): the row's metrics are NaN and the method's results on the set are withheld
#: (rag.results.headline.StageFailures).
STAGE_ERROR = "stage_error"

#: The suffix of a sampled question set: ``<set>@sample`` holds every method on exactly the questions
#: LLM-backed methods run on (rag/runner/sample.py); it shows the answers of its base set.
SAMPLE_SUFFIX = "@sample"

#: Values of ``generation_status``.
ANSWERED, FAILED, NOT_REQUESTED = "answered", "failed", "not requested"

#: Answer metrics (NaN unless the question was answered and has a reference): the engine's list.
ANSWER_METRICS = _ENGINE_ANSWER_METRICS

#: The optional LLM judge's verdict (1 correct, 0 not, NaN not judged): rag/generation/judge.py.
JUDGE = "judge"

#: Every answer column a comparison treats as an answer metric (lift over closed_book, no undefined count).
ANSWER_COLUMNS = (*ANSWER_METRICS, JUDGE)

#: An answer with token F1 below this is an "answer miss" in the failure analysis.
ANSWER_F1_THRESHOLD = 0.5

CHUNK_PREFIX = "chunk:"

#: Columns the statistics read besides the metrics (a change in any of them invalidates cached statistics).
STATISTICS_INPUTS = [GENERATION_STATUS, STAGE_ERROR, RETRIEVAL_MS, LLM_CALLS, LLM_TOKENS, GENERATION_S, PROMPT_TOKENS,
                     COMPLETION_TOKENS, CHUNKS_USED]


def sampled_set(question_set: str) -> str:
    """The name of ``question_set``'s sampled set (:data:`SAMPLE_SUFFIX`)."""
    return question_set + SAMPLE_SUFFIX


def base_set(question_set: str) -> str:
    """The set a sampled set was drawn from (``known_item@sample`` -> ``known_item``); any other set is its own."""
    return question_set.removesuffix(SAMPLE_SUFFIX)
