"""Answer metrics: exact match and token F1 of a generated answer against reference answers.

- ``normalization="squad"`` (default; SQuAD v1.1's official ``evaluate-v1.1.py``): lower-case,
  remove ASCII punctuation, remove the articles a/an/the, collapse white space; F1 over the
  *multiset* of tokens (``Counter`` intersection).
- ``normalization="seed"`` (seed 003's description): lower-case, remove punctuation, no article
  removal; F1 over token *sets*.

EM is 1.0 when the normalized strings are equal. With several references each score is the
maximum over them (SQuAD's ``metric_max_over_ground_truths``). No common token -> F1 0 (so two
empty answers score F1 0, as SQuAD v1.1).
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

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


def answer_scores(prediction: str, references: str | Sequence[str], normalization: str = "squad") -> dict[str, float]:
    """``{"em": ..., "f1": ...}``, each the maximum over ``references`` (a string or a non-empty list)."""
    mode = _normalization(normalization)
    if not isinstance(prediction, str):
        raise ValueError(f"prediction: expected a string, got {type(prediction).__name__}")
    refs = [references] if isinstance(references, str) else references
    if not isinstance(refs, Sequence) or not refs or not all(isinstance(ref, str) for ref in refs):
        raise ValueError(f"references: expected a string or a non-empty list of strings, got {references!r:.80}")
    normalized = mode.normalize(prediction)
    return {
        "em": max(float(normalized == mode.normalize(ref)) for ref in refs),
        "f1": max(token_overlap(prediction, ref, normalization).f1 for ref in refs),
    }
