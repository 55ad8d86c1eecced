"""The run configuration: one pydantic model tree loaded from YAML.

Every model forbids unknown keys. :func:`load_config` turns any validation failure into a
:class:`rag.errors.ConfigError` naming the dotted key path (e.g. ``retrievers.2.params.k1``) and what
was expected, applies ``--set dotted.key=value`` overrides (values parsed as YAML) before validation,
and resolves relative paths against the directory of the config file.

Defaults: ``top_k`` 10, ``cache_dir`` ``~/.cache/rag-bench`` (override it per config; the shipped
configs use ``.cache/`` at the repository root), ``output_dir`` ``runs`` next to the config file.
"""

from __future__ import annotations

import typing
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import (
    BaseModel, ConfigDict, Field, PositiveInt, RootModel, ValidationError, ValidationInfo, field_validator, model_validator,
)

from rag.baselines import BASELINES
from rag.chunking import ChunkingConfig
from rag.data import DatasetConfig
from rag.errors import ConfigError
from rag.generation import GeneratorConfig
from rag.retrievers.base import RETRIEVERS, RetrieverParams

DEFAULT_CACHE_DIR = Path("~/.cache/rag-bench")


class StrictModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RetrieverSpec(StrictModel):
    """One configured retrieval method: a unique ``name`` (used in reports), a registered ``type``
    (``dense``, ``bm25``, ``rrf``, ``convex``, ...) and that type's parameters."""

    name: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    type: str
    params: dict[str, Any] = Field(default_factory=dict)

    def validated_params(self) -> RetrieverParams:
        """The parameters validated by the type's own ``Params`` model (raises ValidationError)."""
        return RETRIEVERS.get(self.type).Params.model_validate(self.params)


class GenerationSection(StrictModel):
    """Answer generation from each method's top chunks.

    ``questions_per_set``: LLM answers for a seeded sample of this many questions per question set
    (the same questions for every method, so paired tests stay paired); ``null`` = all questions.
    Each method's top-k chunks are the contexts; the generator's own ``max_chunks`` and
    ``context_token_budget`` bound what enters the prompt.
    """

    generator: GeneratorConfig
    questions_per_set: PositiveInt | None = None


class EvaluationSection(StrictModel):
    """Metric names follow :func:`evaluation.evaluate_run` (``mrr``, ``recall@10``, ``ndcg@10``,
    ``map@10``, ``p@10``, ``hit@10``); ``levels`` lists the evaluation levels (``url`` = document
    level via ``chunk.url``, ``chunk`` = chunks of the gold documents are relevant). ``ties``: ``id``
    evaluates each list in the order its retriever returned it (the one tie rule: score, then chunk
    id descending, as trec_eval); ``expected`` takes every metric's expected value over all orders of
    equally scored items (McSherry & Najork 2008). Paired tests:
    sign-flip randomization (t-test p-values reported alongside), ``correction`` across the method
    pairs of one metric and question set. ``answer_in_context``: the cut-offs k of
    ``answer_in_context@k`` (a reference answer in the top-k chunks; default ``[top_k]``)."""

    metrics: list[str] = Field(
        default_factory=lambda: ["mrr@10", "recall@10", "ndcg@10", "map@10", "p@10", "hit@10"], min_length=1
    )
    levels: list[Literal["url", "chunk"]] = Field(default_factory=lambda: ["url"], min_length=1)
    convention: Literal["trec", "autorag"] = "trec"
    ties: Literal["id", "expected"] = "id"
    answer_normalization: Literal["squad", "seed"] = "squad"
    confidence: float = Field(default=0.95, gt=0.0, lt=1.0)
    n_resamples: PositiveInt = 10000
    correction: Literal["holm", "none"] = "holm"
    alpha: float = Field(default=0.05, gt=0.0, lt=1.0)
    answer_in_context: list[PositiveInt] | None = Field(default=None, min_length=1)

    @field_validator("metrics")
    @classmethod
    def _known_metrics(cls, metrics: list[str]) -> list[str]:
        from evaluation.metrics import parse_metric

        return [parse_metric(metric).column for metric in metrics]


class RunConfig(StrictModel):
    """A whole benchmark run."""

    name: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    seed: int = 0
    dataset: DatasetConfig
    question_sets: list[str] | None = None
    limit: PositiveInt | None = None
    chunking: ChunkingConfig = Field(default_factory=ChunkingConfig)
    retrievers: list[RetrieverSpec] = Field(min_length=1)
    methods: list[str] | None = None
    baselines: list[str] = Field(default_factory=list)  # answer-only methods (rag.baselines)
    top_k: PositiveInt = 10
    depth: PositiveInt = 100
    generation: GenerationSection | None = None
    evaluation: EvaluationSection = Field(default_factory=EvaluationSection)
    output_dir: Path = Path("runs")
    cache_dir: Path = DEFAULT_CACHE_DIR

    @field_validator("retrievers")
    @classmethod
    def _unique_names(cls, retrievers: list[RetrieverSpec]) -> list[RetrieverSpec]:
        names = [spec.name for spec in retrievers]
        duplicates = sorted({name for name in names if names.count(name) > 1})
        if duplicates:
            raise ValueError(f"retriever names must be unique; repeated: {', '.join(duplicates)}")
        return retrievers

    @field_validator("methods")
    @classmethod
    def _methods_configured(cls, methods: list[str] | None, info: ValidationInfo) -> list[str] | None:
        """``methods`` picks which configured retrievers are evaluated (fusion inputs are still built)."""
        configured = [spec.name for spec in info.data.get("retrievers", [])]
        unknown = [name for name in methods or [] if name not in configured]
        if unknown:
            raise ValueError(f"unknown method(s) {unknown}; expected names of configured retrievers: {configured}")
        return methods

    @model_validator(mode="after")
    def _retrievers_resolve(self) -> "RunConfig":
        _check_retriever_specs(self.retrievers)
        taken = {spec.name for spec in self.retrievers}
        for index, name in enumerate(self.baselines):
            BASELINES.get(name, key=f"baselines.{index}")
            if name in taken:
                raise ConfigError(f"baselines.{index}", f"{name!r} is already a method name; expected each name once")
            taken.add(name)
        return self

    @model_validator(mode="after")
    def _cutoffs_within_depth(self) -> "RunConfig":
        """Every method keeps ``depth`` results; a cut-off beyond them would be computed on fewer
        results than its name says, so it is refused (raised as ConfigError, which pydantic lets through)."""
        from evaluation.metrics import parse_metric

        if self.top_k > self.depth:
            raise ConfigError("top_k", f"top_k {self.top_k} exceeds depth {self.depth}; expected top_k <= depth")
        for metric in self.evaluation.metrics:
            k = parse_metric(metric).k
            if k is not None and k > self.depth:
                raise ConfigError(
                    "evaluation.metrics",
                    f"{metric}: cut-off {k} exceeds depth {self.depth} (results kept per question); "
                    f"expected a cut-off <= {self.depth}, or raise depth",
                )
        for k in self.evaluation.answer_in_context or []:
            if k > self.depth:
                raise ConfigError("evaluation.answer_in_context",
                                  f"cut-off {k} exceeds depth {self.depth}; expected a cut-off <= {self.depth}")
        return self

    def retriever(self, name: str) -> RetrieverSpec:
        return next(spec for spec in self.retrievers if spec.name == name)


def _check_retriever_specs(specs: Sequence[RetrieverSpec]) -> None:
    """Known type, valid params, and fusion inputs that name configured retrievers.

    Raises :class:`ConfigError` directly (pydantic lets non-ValueError exceptions through), so the
    key path points inside ``params`` with the type's own expectations.
    """
    names = {spec.name for spec in specs}
    for index, spec in enumerate(specs):
        prefix = f"retrievers.{index}"
        cls = RETRIEVERS.get(spec.type, key=f"{prefix}.type")
        try:
            params = cls.Params.model_validate(spec.params)
        except ValidationError as exc:
            raise config_error_from_validation(exc, spec.params, cls.Params, prefix=f"{prefix}.params") from None
        missing = [needed for needed in cls(spec.name, params).requires() if needed not in names]
        if missing:
            raise ConfigError(
                f"{prefix}.params",
                f"retriever {spec.name!r} fuses {missing}, which are not configured; expected names among {sorted(names)}",
            )


# --------------------------------------------------------------------------------------------------
# Loading, overrides, error conversion


def load_config(path: str | Path, overrides: Sequence[str] = ()) -> RunConfig:
    """Read a YAML config, apply ``dotted.key=value`` overrides, validate, resolve relative paths."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError("--config", f"file not found: {path}; expected a YAML run configuration")
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise ConfigError("<file>", f"not valid YAML: {exc}", source=path) from None
    if not isinstance(raw, dict):
        raise ConfigError("<file>", "expected a mapping of config keys at the top level", source=path)
    for override in overrides:
        apply_override(raw, override)
    return config_from_mapping(raw, base_dir=path.parent, source=path)


def config_from_mapping(raw: Mapping[str, Any], base_dir: Path, source: str | Path | None = None) -> RunConfig:
    """Validate a config mapping; relative paths resolve against ``base_dir``."""
    try:
        config = RunConfig.model_validate(dict(raw))
    except ValidationError as exc:
        raise config_error_from_validation(exc, raw, RunConfig, source=source) from None
    except ConfigError as exc:  # raised by the retriever checks, which know no file name
        raise ConfigError(exc.key, str(exc).removeprefix(f"{exc.key}: "), source) from None
    return resolve_paths(config, base_dir.resolve())


def apply_override(raw: dict[str, Any], override: str) -> None:
    """Set ``a.b.0.c=value`` in the raw mapping. The value is parsed as YAML (``3`` is an int,
    ``[a, b]`` a list, ``null`` None). A list element is addressed by index or, for lists of
    mappings with a ``name`` (the retrievers), by that name."""
    key, sep, text = override.partition("=")
    if not sep or not key.strip():
        raise ConfigError("--set", f"{override!r}: expected dotted.key=value")
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(key, f"override value {text!r} is not valid YAML: {exc}") from None
    parts = key.strip().split(".")
    node: Any = raw
    for depth, part in enumerate(parts):
        last = depth == len(parts) - 1
        where = ".".join(parts[: depth + 1])
        if isinstance(node, list):
            index = _list_index(node, part, where)
            if last:
                node[index] = value
            else:
                node = node[index]
        elif isinstance(node, dict):
            if last:
                node[part] = value
            else:
                if not isinstance(node.get(part), (dict, list)):
                    node[part] = {}
                node = node[part]
        else:
            raise ConfigError(where, f"cannot set a key inside a {type(node).__name__} value")


def _list_index(items: list, part: str, where: str) -> int:
    if part.lstrip("-").isdigit():
        index = int(part)
        if -len(items) <= index < len(items):
            return index
        raise ConfigError(where, f"index {index} out of range; the list has {len(items)} entries")
    for index, item in enumerate(items):
        if isinstance(item, dict) and item.get("name") == part:
            return index
    names = [item.get("name") for item in items if isinstance(item, dict)]
    raise ConfigError(where, f"no entry named {part!r}; expected an index or one of {names}")


def config_error_from_validation(
    exc: ValidationError,
    data: Any,
    model: type[BaseModel],
    prefix: str = "",
    source: str | Path | None = None,
) -> ConfigError:
    """The first validation error as a ConfigError: dotted key path + what was expected."""
    error = exc.errors(include_url=False)[0]
    parts, model_at = _locate(error["loc"], data, model)
    key = ".".join(part for part in [prefix, *parts] if part) or "<root>"
    if error["type"] == "extra_forbidden":
        allowed = sorted(model_at.model_fields) if model_at is not None else []
        message = "unknown key" + (f"; expected one of: {', '.join(allowed)}" if allowed else "")
    elif error["type"] == "missing":
        message = "missing required key"
    else:
        message = f"{error['msg'].removeprefix('Value error, ')} (got {error.get('input')!r})"
    return ConfigError(key, message, source)


def _locate(loc: Sequence[Any], data: Any, model: type[BaseModel] | None) -> tuple[list[str], type[BaseModel] | None]:
    """Walk pydantic's error location through the input data, dropping the union tags pydantic adds
    (e.g. the ``wiki`` in ``dataset.wiki.path``), and track the model class at the end (for the list
    of allowed keys)."""
    parts: list[str] = []
    node, current = data, model
    parent_model: type[BaseModel] | None = model
    for position, item in enumerate(loc):
        is_last = position == len(loc) - 1
        if isinstance(node, Mapping) and item in node:
            parts.append(str(item))
            parent_model = current
            current = _field_model(current, str(item))
            node = node[item]
        elif isinstance(node, list) and isinstance(item, int) and 0 <= item < len(node):
            parts.append(str(item))
            node = node[item]
        elif is_last or not isinstance(item, str):
            parts.append(str(item))
            parent_model = current
            node = None
        else:  # a tag of a (discriminated) union: select the member, keep the path clean
            current = _union_member(current, item)
    return parts, parent_model if isinstance(parent_model, type) else None


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    """BaseModel classes inside an annotation (Optional, Union, list[...], Annotated[...])."""
    if isinstance(annotation, type) and issubclass(annotation, RootModel):
        return _models_in(annotation.model_fields["root"].annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [model for arg in typing.get_args(annotation) for model in _models_in(arg)]


def _field_model(model: Any, field: str) -> Any:
    candidates = model if isinstance(model, list) else [model]
    for candidate in candidates:
        if isinstance(candidate, type) and issubclass(candidate, BaseModel) and field in candidate.model_fields:
            members = _models_in(candidate.model_fields[field].annotation)
            return members[0] if len(members) == 1 else (members or None)
    return None


def _union_member(model: Any, tag: str) -> Any:
    candidates = model if isinstance(model, list) else [model]
    for candidate in candidates:
        if not (isinstance(candidate, type) and issubclass(candidate, BaseModel)):
            continue
        for field in candidate.model_fields.values():
            if typing.get_origin(field.annotation) is Literal and tag in typing.get_args(field.annotation):
                return candidate
    return model


def resolve_paths(model: BaseModel, base_dir: Path) -> Any:
    """A copy of ``model`` with every relative ``Path`` value (at any depth) made absolute against
    ``base_dir``; ``~`` is expanded."""

    def resolve(value: Any) -> Any:
        if isinstance(value, Path):
            value = value.expanduser()
            return value if value.is_absolute() else (base_dir / value).resolve()
        if isinstance(value, BaseModel):
            updates = {name: resolve(getattr(value, name)) for name in type(value).model_fields}
            return value.model_copy(update=updates)
        if isinstance(value, list):
            return [resolve(item) for item in value]
        if isinstance(value, tuple):
            return tuple(resolve(item) for item in value)
        if isinstance(value, dict):
            return {key: resolve(item) for key, item in value.items()}
        return value

    return resolve(model)
