"""The settings of every query transform (the ``query:`` mapping of a retriever's params), one model
per transform discriminated by ``type``, and the rule that ties each to the retriever types it
applies to. Kept free of retriever imports: the retrievers' params import this module.

Defaults are sized for the offline default, a 2-core CPU running SmolLM2-135M through llama.cpp
(docs/retrievers.md, "Query transforms"): HyDE writes one passage of at most 96 tokens, multi-query
one reply of at most 96 tokens holding 3 paraphrases.
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal, Union

from pydantic import Field, field_validator

from rag.generation.config import LocalGeneratorConfig, OpenAIGeneratorConfig, _template_placeholders
from rag.validation import ConfigModel

#: Gao et al. 2022, "Precise Zero-Shot Dense Retrieval without Relevance Labels", the web-search
#: instruction (their Table 6).
HYDE_PROMPT = "Please write a passage to answer the question.\nQuestion: {question}\nPassage:"
#: LangChain's ``MultiQueryRetriever`` default prompt (langchain/retrievers/multi_query.py), with ``n``
#: in place of its fixed 3.
MULTI_QUERY_PROMPT = (
    "You are an AI language model assistant. Your task is to generate {n} different versions of the "
    "given user question to retrieve relevant documents from a vector database. By generating multiple "
    "perspectives on the user question, your goal is to help the user overcome some of the limitations "
    "of the distance-based similarity search. Provide these alternative questions separated by newlines.\n"
    "Original question: {{question}}"
)


class QueryTransformParams(ConfigModel):
    """Base of every transform's settings: unknown keys are errors. ``retriever_types``: the
    retriever types it applies to (any other is a configuration error)."""

    type: str
    retriever_types: ClassVar[frozenset[str]] = frozenset()

    def llm_calls_per_query(self) -> int:
        """LLM requests the transform sends per question (0: offline)."""
        return 0


class Rm3Params(QueryTransformParams):
    """RM3 pseudo-relevance feedback (:mod:`rag.retrievers.query_transforms.rm3`), Anserini's parameter names
    and defaults (``-rm3.fbDocs 10 -rm3.fbTerms 10 -rm3.originalQueryWeight 0.5``). ``filter_terms``:
    Anserini's feedback-term filter (2 to 20 word characters, in at most 10% of the chunks)."""

    type: Literal["rm3"]
    fb_docs: int = Field(10, gt=0)
    fb_terms: int = Field(10, gt=0)
    original_query_weight: float = Field(0.5, ge=0, le=1)
    filter_terms: bool = True
    retriever_types: ClassVar[frozenset[str]] = frozenset({"bm25"})


LLMConfig = Annotated[Union[OpenAIGeneratorConfig, LocalGeneratorConfig], Field(discriminator="type")]


class LLMTransformParams(QueryTransformParams):
    """What an LLM transform asks and of whom. ``generator``: the LLM (default: the run's, see
    :class:`rag.retrievers.base.StageServices`); its answer-prompt settings are replaced by
    ``system_prompt`` and ``user_prompt`` (which holds ``{question}`` and no other placeholder),
    ``max_tokens`` and ``temperature``."""

    generator: LLMConfig | None = None
    max_tokens: int = Field(96, gt=0)
    system_prompt: str = ""
    user_prompt: str | None

    def prompt(self) -> str:
        """The user-message template sent (``{question}`` filled in per question)."""
        return self.user_prompt

    @field_validator("user_prompt")
    @classmethod
    def _question_only(cls, template: str | None) -> str | None:
        if template is not None and _template_placeholders(template) != {"question"}:
            raise ValueError("the template must contain {question} and no other placeholder "
                             "(write literal braces as {{ }})")
        return template


class HydeParams(LLMTransformParams):
    """HyDE (:mod:`rag.retrievers.query_transforms.hyde`): ``n`` hypothetical passages, one request each.
    ``temperature``: default 0 for one passage (deterministic), 0.7 for several (HyDE's sampling)."""

    type: Literal["hyde"]
    n: int = Field(1, gt=0, le=16)
    temperature: float | None = Field(None, ge=0, le=2)
    user_prompt: str = HYDE_PROMPT
    retriever_types: ClassVar[frozenset[str]] = frozenset({"dense"})

    def llm_calls_per_query(self) -> int:
        return self.n

    def sampling_temperature(self) -> float:
        if self.temperature is not None:
            return self.temperature
        return 0.0 if self.n == 1 else 0.7


class MultiQueryParams(LLMTransformParams):
    """Multi-query (:mod:`rag.retrievers.query_transforms.multi_query`): one request whose reply holds up to
    ``n`` paraphrases, one per line (LangChain's ``MultiQueryRetriever``); the lists of the question
    and of each paraphrase are fused with RRF, constant ``rrf_k``."""

    type: Literal["multi_query"]
    n: int = Field(3, gt=0, le=10)
    temperature: float = Field(0.0, ge=0, le=2)
    user_prompt: str | None = Field(None, description="default: LangChain's prompt asking for n versions")
    rrf_k: float = Field(60.0, ge=1)
    retriever_types: ClassVar[frozenset[str]] = frozenset({"bm25", "dense"})

    def prompt(self) -> str:
        return self.user_prompt if self.user_prompt is not None else MULTI_QUERY_PROMPT.format(n=self.n)

    def llm_calls_per_query(self) -> int:
        return 1


QueryTransformConfig = Annotated[Union[Rm3Params, HydeParams, MultiQueryParams], Field(discriminator="type")]


def for_retriever(query: QueryTransformParams | None, retriever_type: str) -> QueryTransformParams | None:
    """``query`` when its transform applies to ``retriever_type``; else a ValueError naming where it does."""
    if query is not None and retriever_type not in query.retriever_types:
        raise ValueError(f"query transform {query.type!r} applies to retriever type(s) "
                         f"{', '.join(sorted(query.retriever_types))}, not {retriever_type!r}")
    return query
