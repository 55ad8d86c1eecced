"""Answer metrics: exact match, token F1 and match of a generated answer against reference answers,
and ``answer_in_context``: whether a reference occurs in a method's top-k chunks.

- ``normalization="squad"`` (default; SQuAD v1.1's official ``evaluate-v1.1.py``): lower-case,
  remove ASCII punctuation, remove the articles a/an/the, collapse white space; F1 over the
  *multiset* of tokens (``Counter`` intersection).
- ``normalization="seed"`` (seed 003's description): lower-case, remove punctuation, no article
  removal; F1 over token *sets*.

EM is 1.0 when the normalized strings are equal. With several references each score is the
maximum over them (SQuAD's ``metric_max_over_ground_truths``). No common token -> F1 0 (so two
empty answers score F1 0, as SQuAD v1.1).

Containment (``match`` and ``answer_in_context``) compares *containment forms*:
``form(x) = N(fold(N(x)))`` with N the normalization above and ``fold`` = Unicode NFKD, combining
marks dropped (``Gödel`` -> ``godel``), case-folded, and every character of Unicode category P
(punctuation) or S (symbol) deleted — the Unicode extension of SQuAD's deletion of
``string.punctuation``, which is exactly the ASCII characters of those categories (so ``’``, ``–``,
``«»`` and fullwidth forms go like ``'``, ``-`` and ``"``). A reference is *contained* in a text when
its form occurs in the text's form as a contiguous token sequence: ``" " + ref + " "`` is a
substring of ``" " + text + " "`` (the normalized-substring test of BERGEN's and FlashRAG's
``match``, anchored at word boundaries, so ``1989`` is not found in ``19890``). References whose
form is empty (e.g. ``"The"``) are ignored; with none left, match and answer_in_context are
undefined (NaN). Since ``form`` is a function of ``N(x)``, EM 1 against a reference with a
non-empty form implies match 1.

- ``match``: 1.0 when some reference is contained in the prediction (BERGEN, FlashRAG ``acc``).
- ``answer_in_context@k``: 1.0 when some reference is contained in one of the first k contexts,
  each context searched on its own (the top-k retrieval accuracy of open-domain QA, Karpukhin et al.
  2020, DPR's ``has_answer``; FlashRAG's retrieval recall).
"""

from __future__ import annotations

import math
import re
import string
import unicodedata
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

ANSWER_METRICS = ("em", "f1", "match")
ANSWER_IN_CONTEXT = "answer_in_context"

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = str.maketrans("", "", string.punctuation)


def _squad_normalize(text: str) -> str:
    return " ".join(_ARTICLES.sub(" ", text.lower().translate(_PUNCTUATION)).split())


def _seed_normalize(text: str) -> str:
    return " ".join(text.lower().translate(_PUNCTUATION).split())


@dataclass(frozen=True)
class TokenOverlap:
    precision: float
    recall: float
    f1: float


def _overlap(common: int, n_prediction: int, n_reference: int) -> TokenOverlap:
    if common == 0:
        return TokenOverlap(0.0, 0.0, 0.0)
    precision, recall = common / n_prediction, common / n_reference
    return TokenOverlap(precision, recall, 2 * precision * recall / (precision + recall))


def _multiset_overlap(prediction: list[str], reference: list[str]) -> TokenOverlap:
    common = sum((Counter(prediction) & Counter(reference)).values())
    return _overlap(common, len(prediction), len(reference))


def _set_overlap(prediction: list[str], reference: list[str]) -> TokenOverlap:
    predicted, referenced = set(prediction), set(reference)
    return _overlap(len(predicted & referenced), len(predicted), len(referenced))


@dataclass(frozen=True)
class Normalization:
    normalize: Callable[[str], str]
    overlap: Callable[[list[str], list[str]], TokenOverlap]


#: Normalization name -> (text normalizer, token overlap). Add a mode by adding an entry.
NORMALIZATIONS: dict[str, Normalization] = {
    "squad": Normalization(_squad_normalize, _multiset_overlap),
    "seed": Normalization(_seed_normalize, _set_overlap),
}


def _normalization(name: object) -> Normalization:
    try:
        return NORMALIZATIONS[name]  # type: ignore[index]
    except (KeyError, TypeError):
        raise ValueError(f"normalization: expected one of {', '.join(NORMALIZATIONS)}, got {name!r}") from None


def token_overlap(prediction: str, reference: str, normalization: str = "squad") -> TokenOverlap:
    """Token precision, recall and F1 of one prediction against one reference."""
    mode = _normalization(normalization)
    return mode.overlap(mode.normalize(prediction).split(), mode.normalize(reference).split())


def _references(references: str | Sequence[str]) -> list[str]:
    refs = [references] if isinstance(references, str) else references
    if not isinstance(refs, Sequence) or not refs or not all(isinstance(ref, str) for ref in refs):
        raise ValueError(f"references: expected a string or a non-empty list of strings, got {references!r:.80}")
    return list(refs)


def answer_scores(prediction: str, references: str | Sequence[str], normalization: str = "squad") -> dict[str, float]:
    """``{"em": ..., "f1": ..., "match": ...}``, each the maximum over ``references`` (a string or a
    non-empty list); ``match`` is NaN when no reference has a non-empty containment form.

    Args:
        prediction: the generated answer.
        references: the reference answer, or a non-empty list of them.
        normalization: the answer normalization (``squad`` default).

    Returns:
        ``{"em": float, "f1": float, "match": float}``.
    """
    mode = _normalization(normalization)
    if not isinstance(prediction, str):
        raise ValueError(f"prediction: expected a string, got {type(prediction).__name__}")
    refs = _references(references)
    normalized = mode.normalize(prediction)
    return {
        "em": max(float(normalized == mode.normalize(ref)) for ref in refs),
        "f1": max(token_overlap(prediction, ref, normalization).f1 for ref in refs),
        "match": _contained(first_containing([containment_form(prediction, normalization)],
                                             reference_forms(refs, normalization)), 1),
    }


# --------------------------------------------------------------------------------------------------
# Containment: match and answer_in_context


def _fold(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text).casefold()
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch) and unicodedata.category(ch)[0] not in "PS")


def containment_form(text: str, normalization: str = "squad") -> str:
    """``N(fold(N(text)))``: the token sequence (single spaces) that containment compares."""
    mode = _normalization(normalization)
    return mode.normalize(_fold(mode.normalize(text)))


def reference_forms(references: str | Sequence[str], normalization: str = "squad") -> list[str]:
    """The distinct non-empty containment forms of the references (empty: containment undefined)."""
    return list(dict.fromkeys(form for ref in _references(references) if (form := containment_form(ref, normalization))))


def first_containing(context_forms: Sequence[str], ref_forms: Sequence[str]) -> float:
    """1-based rank of the first context form containing one of ``ref_forms`` as a token sequence;
    ``inf`` when none does; NaN when ``ref_forms`` is empty (undefined)."""
    if not ref_forms:
        return math.nan
    needles = [f" {ref} " for ref in ref_forms]
    for rank, form in enumerate(context_forms, start=1):
        padded = f" {form} "
        if any(needle in padded for needle in needles):
            return float(rank)
    return math.inf


def answer_in_context(
    contexts: Sequence[str], references: str | Sequence[str], k: int, normalization: str = "squad"
) -> float:
    """1.0 when a reference is contained in one of the first ``k`` contexts, else 0.0; NaN when no
    reference has a non-empty form.

    Args:
        contexts: the retrieved passages in rank order.
        references: the reference answer, or several.
        k: how many of the first contexts are read.
        normalization: the answer normalization (``squad`` default).

    Returns:
        1.0, 0.0 or NaN, as above.
    """
    rank = first_containing([containment_form(c, normalization) for c in contexts[:k]],
                            reference_forms(references, normalization))
    return _contained(rank, k)


def _contained(rank: float, k: int) -> float:
    return rank if math.isnan(rank) else float(rank <= k)


def answer_in_context_at(ranks: Sequence[float] | np.ndarray, ks: Sequence[int]) -> Mapping[str, np.ndarray]:
    """Vectorized over queries: ``{"answer_in_context@k": 1.0 where rank <= k, 0.0 elsewhere, NaN
    where the rank is NaN}`` from the ranks of :func:`first_containing`.

    Args:
        ranks: per query, the rank of the first context holding a reference (NaN: none).
        ks: the cut-offs.

    Returns:
        ``{"answer_in_context@k": array}`` per k, one value per query.
    """
    ranks = np.asarray(ranks, dtype=float)
    undefined = np.isnan(ranks)
    return {f"{ANSWER_IN_CONTEXT}@{k}": np.where(undefined, np.nan, (ranks <= k).astype(float)) for k in ks}
