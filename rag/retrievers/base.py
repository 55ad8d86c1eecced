"""The one interface every retriever implements, and the registry that builds them from config.

A retriever is created from its pydantic ``Params`` model, indexes a list of chunks (using the
directories of an :class:`IndexStorage`, so a re-run with the same model and corpus does no work, and
an interrupted build resumes from what it finished), and searches a batch of queries,
returning one :class:`rag.types.Ranking` per query: at most ``k`` chunk ids in rank order with their
scores, ordered by the project's one tie rule (:mod:`rag.retrievers.ranking`: float32 score
descending, then chunk id descending, as trec_eval).

Adding a retriever means writing one class decorated with ``@RETRIEVERS.register("name")``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar


from rag.registry import Registry
from rag.services import StageServices
from rag.types import Chunk, Ranking
from rag.validation import ConfigModel


class RetrieverParams(ConfigModel):
    """Base of every retriever's parameter model: unknown keys are errors."""

    inputs_key: ClassVar[str] = "retrievers"  # the key that names the inputs, for error messages

    def requires(self) -> list[str]:
        """Names of other retrievers these settings need (fusion and rerank inputs); checked at config load."""
        return []

    def llm_calls_per_query(self) -> int:
        """LLM or model-endpoint requests this method's own step sends per question (a query
        transform's generations, a reranker's scoring requests), not counting its inputs'. A method
        with any (itself or through its inputs) runs on the answer experiment's question sample only
        (the runner's rule); 0 by default."""
        return 0

    def source_fingerprint(self) -> dict[str, str]:
        """What besides these settings decides this method's rankings (a run file's contents): part of
        the key its rankings are cached under (:mod:`rag.runner.retrieval`); nothing by default."""
        return {}

    def measures_cost(self) -> bool:
        """False for a method whose rankings were made elsewhere (a run file): its time here says
        nothing of what it costs, so its cost per question is NaN (unknown) and separates it from no
        method (:mod:`rag.runner.costs`); True by default."""
        return True


class ServedInputsParams(RetrieverParams):
    """Settings of a method whose inputs' rankings are served to it (a fusion, a rerank): the runner
    searches, times and caches each input on its own and hands its rankings to this method through
    :meth:`Retriever.bind`, so this method's measured time is its own step (:mod:`rag.runner.retrieval`)."""

    def input_depth(self, run_depth: int) -> int:
        """Results asked of each input per query when this method is searched at ``run_depth``."""
        return run_depth



@dataclass(frozen=True)
class IndexStorage:
    """Where a retriever keeps what it builds.

    ``own``: its own directory (``<cache_dir>/index/<name>``), used by no other retriever and built
    under the runner's per-name lock; ``embeddings``: the content-addressed embedding store shared by
    every dense retriever and run (``<cache_dir>/embeddings``, see :mod:`rag.embeddings`). Each
    retriever detects its own unfinished builds there (nothing else deletes them).
    """

    own: Path
    embeddings: Path

    @classmethod
    def under(cls, cache_dir: str | Path, name: str) -> "IndexStorage":
        """The standard layout under a cache directory, for the retriever named ``name``."""
        return cls(Path(cache_dir) / "index" / name, Path(cache_dir) / "embeddings")


class Retriever(ABC):
    Params: ClassVar[type[RetrieverParams]] = RetrieverParams

    def __init__(self, name: str, params: RetrieverParams):
        self.name = name
        self.params = params

    @abstractmethod
    def index(self, chunks: Sequence[Chunk], storage: IndexStorage) -> None:
        """Build (or load from ``storage`` when the corpus and settings match) the index; an index
        on disk is marked complete by the retriever itself, as the last step of its build."""

    @abstractmethod
    def search(self, queries: Sequence[str], k: int) -> list[Ranking]:
        """Top-``k`` chunks for each query, in rank order."""

    def bind(self, retrievers: Mapping[str, "Retriever"]) -> None:
        """Give fusion retrievers access to the other configured retrievers (no-op by default)."""

    def use(self, services: StageServices) -> None:
        """Receive the run's :class:`StageServices` before :meth:`index` (no-op by default; query
        transforms and rerankers that call an LLM or endpoint keep them)."""

    def requires(self) -> list[str]:
        """Names of other retrievers this one needs (fusion); those are indexed first."""
        return self.params.requires()


RETRIEVERS: Registry[Retriever] = Registry("retriever")
