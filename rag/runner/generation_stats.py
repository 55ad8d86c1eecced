"""What the generation stage did: answers needed, distinct prompts, cache hits, requests sent, and
whether the context budget cut any prompt (a fact in the report and a warning on the terminal)."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import asdict, dataclass

from rag.generation.base import GenerationResult

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class GenerationCounts:
    needed: int  # answers: methods x asked questions
    distinct: int  # distinct prompts (the others share an answer: ``extra["deduplicated"]``)
    cached: int  # distinct prompts answered from the generation cache
    sent: int  # distinct prompts sent to the generator (answered or failed)
    attempts: int  # requests sent, retries included
    cut: int  # distinct prompts whose context the token budget cut

    @classmethod
    def of(cls, results: Iterable[GenerationResult]) -> "GenerationCounts":
        results = list(results)
        distinct = [r for r in results if not r.extra.get("deduplicated")]
        cached = sum(r.cached for r in distinct)
        return cls(
            needed=len(results), distinct=len(distinct), cached=cached, sent=len(distinct) - cached,
            attempts=sum(r.attempts for r in distinct), cut=sum(bool(r.extra.get("chunks_truncated")) for r in distinct),
        )

    def as_dict(self) -> dict[str, int]:
        return asdict(self)

    def facts(self, budget: int | None) -> list[str]:
        """Report lines; logs a warning when the budget cut some prompt's context."""
        lines = [f"generation: {self.needed} answers needed, {self.distinct} distinct prompts "
                 f"(identical prompts are answered once), {self.cached} from the cache, {self.sent} sent "
                 f"({self.attempts} requests with retries)"]
        if self.cut:
            cut = (f"the context budget ({budget} tokens) cut the context of {self.cut} of {self.distinct} prompts: "
                   "those answers saw fewer chunks than top_k (per_query.csv: chunks_used)")
            log.warning(cut)
            lines.append(cut)
        return lines
