"""An LLM as a judge of its own beside the person: UMBRELA's prompt (Upadhyay, Pradeep, Thakur,
Craswell & Lin, "UMBRELA: UMbrela is the (Open-Source Reproduction of the) Bing RELevance
Assessor", arXiv:2406.06519, 2024; the zero-shot Bing prompt of castorini/umbrela, Apache-2.0), the
assessor used for TREC RAG 2024, on the same 0-3 scale as the page.

``rag-bench judge RUN_DIR --llm`` grades the pool (MTC order of the LLM's own grades, at most
``--limit`` passages) through the run's generator, else the local SmolLM2, or any OpenAI-compatible
endpoint (``--base-url``, ``--model``, ``--api-key-env``); its grades go to the grade file as judge
``llm:<model>`` of kind ``llm``, counted for a verdict only with ``rescore --trust-llm``. A reply
without ``##final score: N`` (N in 0..3) is no grade: counted as unparseable, never stored.

Before its grades are used, it is measured:

* *self-consistency*: every passage is asked twice; the second time sampled at temperature
  :data:`REPEAT_TEMPERATURE` with another seed (at temperature 0 a deterministic server answers the
  same by construction): the share of equal grades and the weighted kappa between the two passes;
* *agreement with each person* who graded the same passages: weighted kappa with the base rates
  beside it, and Kendall's tau between the methods' order (mean nDCG@k on the questions both graded)
  under each judge's grades.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import numpy as np
from scipy.stats import kendalltau

from evaluation.agreement import weighted_kappa
from evaluation.mtc import PoolDecision
from rag.errors import ConfigError
from rag.generation import GenerationRequest, build_generator
from rag.generation.config import LocalGeneratorConfig, OpenAIGeneratorConfig, parse_generator_config
from rag.judging.combine import judges_of
from rag.judging.pool import Pool, read_pool
from rag.judging.store import JUDGMENTS_FILE, Judgment, JudgmentLog, judge_name_problem, now, read_judgments

UMBRELA_PROMPT = (
    "Given a query and a passage, you must provide a score on an integer scale of 0 to 3 with the following meanings:\n"
    "0 = represent that the passage has nothing to do with the query, \n"
    "1 = represents that the passage seems related to the query but does not answer it, \n"
    "2 = represents that the passage has some answer for the query, but the answer may be a bit unclear, or hidden "
    "amongst extraneous information and \n"
    "3 = represents that the passage is dedicated to the query and contains the exact answer.\n\n"
    "Important Instruction: Assign category 1 if the passage is somewhat related to the topic but not completely, "
    "category 2 if passage presents something very important related to the entire topic but also has some extra "
    "information and category 3 if the passage only and entirely refers to the topic. If none of the above "
    "satisfies give it category 0.\n\n"
    "Query: {query}\nPassage: {passage}\n\n"
    "Split this problem into steps:\n"
    "Consider the underlying intent of the search.\n"
    "Measure how well the content matches a likely intent of the query (M).\n"
    "Measure how trustworthy the passage is (T).\n"
    "Consider the aspects above and the relative importance of each, and decide on a final score (O). Final score "
    "must be an integer value only.\n"
    "Do not provide any code in result. Provide each score in the format of: ##final score: score without "
    "providing any reasoning."
)
REPEAT_TEMPERATURE = 0.5
MAX_TOKENS = 24
_SCORE = re.compile(r"##\s*final score\s*:\s*([0-3])\b", re.IGNORECASE)


def parse_grade(reply: str | None) -> int | None:
    """The grade of ``##final score: N``; None when the reply holds no such line."""
    found = _SCORE.search(reply or "")
    return int(found.group(1)) if found else None


def generator_config(run_dir: Path, base_url: str | None, model: str | None, api_key_env: str | None,
                     temperature: float = 0.0, seed: int = 0):
    """The judge's generator: an endpoint given on the command line, else the run's generator (if it
    ran an LLM), else the local SmolLM2; the prompt is sent as a closed-book request."""
    if base_url is not None:
        if model is None:
            raise ConfigError("--model", "required with --base-url: the model the endpoint serves")
        config = OpenAIGeneratorConfig(base_url=base_url, model=model, **({"api_key_env": api_key_env} if api_key_env else {}))
    else:
        plan = json.loads((run_dir / "plan.json").read_text(encoding="utf-8")) if (run_dir / "plan.json").is_file() else {}
        generation = (plan.get("config") or {}).get("generation") or {}
        generator = generation.get("generator") or {}
        config = parse_generator_config(generator) if generator.get("type") in ("openai", "local") else LocalGeneratorConfig()
    return config.model_copy(update={"closed_book_system_prompt": "You are a search quality rater.",
                                     "closed_book_user_prompt": "{question}", "max_tokens": MAX_TOKENS,
                                     "temperature": temperature, "seed": seed})


def grade_passages(generator, pool: Pool, items: list[tuple[str, str, str]], tag: str) -> dict:
    """Ask the generator for each (set, question id, chunk): item -> grade (None: unparseable or failed)."""
    requests = [GenerationRequest(f"{tag}/{s}/{q}/{c}", UMBRELA_PROMPT.format(query=pool.questions[(s, q)].text,
                                                                              passage=pool.chunks[c].text), [],
                                  closed_book=True) for s, q, c in items]
    results = generator.generate(requests)
    return {item: parse_grade(result.answer) for item, result in zip(items, results)}


def mtc_items(pool: Pool, limit: int | None) -> list[tuple[str, str, str]]:
    """The pool in the order MTC asks for it with nothing graded yet (each set in turn), cut at ``limit``."""
    items: list[tuple[str, str, str]] = []
    for name in pool.sets():
        questions = pool.set_questions(name)
        decision, order = pool.judging(questions)
        weights = dict(zip(decision.chunk_items, decision.chunk_weights()))  # computed once, not per chunk
        ranked = sorted(((weights[item], order.key[item], *item) for item in order.sequence), reverse=True)
        items += [(name, q, c) for _, _, q, c in ranked]
    return items[:limit] if limit is not None else items


def method_order_tau(pool: Pool, a: dict, b: dict) -> float | None:
    """Kendall's tau between the methods' mean nDCG@k under grades ``a`` and under ``b`` (item ->
    grade), on the questions both graded."""
    questions = {(s, q) for s, q, _ in a} & {(s, q) for s, q, _ in b}
    if not questions:
        return None
    means = []
    for grades in (a, b):
        by_set: dict[str, PoolDecision] = {}
        for s, q in questions:
            if s not in by_set:
                qs = [x for x in pool.set_questions(s) if (s, x.qid) in questions]
                by_set[s], _ = pool.judging(qs)
        for (s, q, c), g in grades.items():
            if (s, q) in questions and g is not None and s in by_set:
                by_set[s].judge(q, c, g)
        values = np.vstack([d.values for d in by_set.values()])
        means.append(values.mean(axis=0))
    tau = kendalltau(means[0], means[1]).statistic
    return None if np.isnan(tau) else float(tau)


def judge_with_llm(run_dir: Path, base_url: str | None = None, model: str | None = None,
                   api_key_env: str | None = None, limit: int | None = None, progress: bool = True) -> Iterator[str]:
    """Grade the pool with UMBRELA's prompt, store the grades, and report (module docstring)."""
    pool = read_pool(run_dir)
    config = generator_config(run_dir, base_url, model, api_key_env)
    judge = f"llm:{config.model}"
    if problem := judge_name_problem(judge):
        raise ConfigError("--model", f"{problem}: the LLM judge is named after its model")
    items = mtc_items(pool, limit)
    yield f"LLM judge {judge}: grading {len(items)} passages twice with UMBRELA's prompt"
    with build_generator(config, run_dir / "llm-judge-cache") as generator:
        first = grade_passages(generator, pool, items, "umbrela")
    repeat = config.model_copy(update={"temperature": REPEAT_TEMPERATURE, "seed": 1})
    with build_generator(repeat, run_dir / "llm-judge-cache") as generator:
        second = grade_passages(generator, pool, items, "umbrela-repeat")
    stamp = now()
    graded = [Judgment(question_set=s, question_id=q, question=pool.questions[(s, q)].text, chunk_id=c,
                       url=pool.chunks[c].url, grade=g, judge=judge, time=stamp, kind="llm")
              for (s, q, c), g in first.items() if g is not None]
    JudgmentLog(run_dir / JUDGMENTS_FILE).append(graded)
    unparseable = sum(g is None for g in first.values())
    yield (f"  {len(graded)} grades stored as judge {judge!r} (kind llm: counted only with rescore --trust-llm); "
           f"{unparseable} replies without '##final score: 0-3' not stored")
    both = [(first[i], second[i]) for i in items if first[i] is not None and second[i] is not None]
    if both:
        k = weighted_kappa([x for x, _ in both], [y for _, y in both])
        kappa = "undefined" if np.isnan(k.kappa) else f"{k.kappa:.2f}"
        yield (f"  self-consistency: the same grade on {k.observed:.0%} of {k.n} passages asked twice (the repeat "
               f"sampled at temperature {REPEAT_TEMPERATURE}); weighted kappa {kappa}; graded >= 2: "
               f"{k.base_rate_a:.0%} / {k.base_rate_b:.0%}; grades {dict(sorted(_counts(x for x, _ in both).items()))}")
    else:
        yield "  self-consistency: no passage got a parseable grade twice"
    everyone = read_judgments(run_dir / JUDGMENTS_FILE).judgments
    mine = {i: g for i, g in first.items() if g is not None}
    for person, kind in judges_of(everyone).items():
        if kind != "person":
            continue
        theirs = {(j.question_set, j.question_id, j.chunk_id): j.grade for j in everyone
                  if j.judge == person and j.grade is not None and j.chunk_id is not None}
        shared = [i for i in mine if i in theirs]
        if not shared:
            yield f"  agreement with {person}: no passage graded by both"
            continue
        k = weighted_kappa([theirs[i] for i in shared], [mine[i] for i in shared])
        tau = method_order_tau(pool, theirs, mine)
        yield (f"  agreement with {person}: weighted kappa {'undefined' if np.isnan(k.kappa) else f'{k.kappa:.2f}'} on "
               f"{k.n} passages both graded (same grade {k.observed:.0%}; graded >= 2: {person} {k.base_rate_a:.0%}, "
               f"LLM {k.base_rate_b:.0%}); Kendall tau of the methods' order under each one's grades: "
               + ("undefined" if tau is None else f"{tau:.2f}"))


def _counts(values) -> dict[int, int]:
    counts: dict[int, int] = {}
    for v in values:
        counts[v] = counts.get(v, 0) + 1
    return counts
