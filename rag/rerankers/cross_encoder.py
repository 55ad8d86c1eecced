"""The ``cross_encoder`` reranker: a sentence-transformers ``CrossEncoder`` loaded from a local
directory the user gives (``model``), offline: nothing is downloaded (``HF_HUB_OFFLINE=1``,
``local_files_only``), since no cross-encoder ships with packaged weights. A directory made with
``CrossEncoder(...).save_pretrained(path)`` (or a downloaded Hugging Face snapshot of one, such as
``cross-encoder/ms-marco-MiniLM-L6-v2``) works.

Each (question, chunk text) pair is scored by ``CrossEncoder.predict`` in batches of ``batch_size``,
with the model's own activation (a one-label model's sigmoid, which keeps the order of its logits);
the model is loaded on the first scoring call and kept. No LLM or endpoint calls: the cost is time.
The retrieval cache knows the model by its path: replace a model in place and the cache still holds
the old model's rankings (change the path, or clear ``<cache_dir>/retrieval``).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import Literal

from pydantic import Field

from rag.models import resolve_device
from rag.errors import BenchError
from rag.models import quiet_thread_pools, set_offline
from rag.rerankers.base import RERANKERS, Candidate, Reranker, RerankerParams, Scored


class CrossEncoderParams(RerankerParams):
    """``model``: the local model directory (relative to the config file); ``device``: ``auto``
    (CUDA when available), ``cpu``, ``cuda``...; ``max_length``: tokens per pair (null: the model's)."""

    type: Literal["cross_encoder"] = "cross_encoder"
    model: Path
    device: str = "auto"
    batch_size: int = Field(32, gt=0)
    max_length: int | None = Field(None, gt=0)


@RERANKERS.register("cross_encoder")
class CrossEncoderReranker(Reranker):
    """Scores with a local CrossEncoder (module docstring)."""

    Params = CrossEncoderParams
    params: CrossEncoderParams

    @cached_property
    def model(self):
        """The CrossEncoder, loaded offline on first use."""
        path = self.params.model
        if not (path / "config.json").is_file():
            raise BenchError(f"{self.key}.model: {path} is not a model directory (no config.json); expected a local "
                             "CrossEncoder saved with save_pretrained or a downloaded snapshot of one")
        set_offline()
        quiet_thread_pools()
        from sentence_transformers import CrossEncoder

        try:
            return CrossEncoder(str(path), device=resolve_device(self.params.device), local_files_only=True,
                                max_length=self.params.max_length)
        except (OSError, ValueError) as error:
            raise BenchError(f"{self.key}.model: cannot load a CrossEncoder from {path} ({error})") from None

    def score(self, questions: Sequence[str], candidates: Sequence[Sequence[Candidate]]) -> list[Scored]:
        pairs = [(question, found.text) for question, found_list in zip(questions, candidates, strict=True)
                 for found in found_list]
        if not pairs:
            return [Scored([]) for _ in questions]
        scores = self.model.predict(pairs, batch_size=self.params.batch_size, show_progress_bar=False).tolist()
        scored, start = [], 0
        for found_list in candidates:
            scored.append(Scored([float(s) for s in scores[start : start + len(found_list)]]))
            start += len(found_list)
        return scored
