"""The run configuration: one pydantic model tree loaded from YAML.

Every model forbids unknown keys and refuses booleans for numbers (:class:`rag.validation.ConfigModel`).
:func:`load_config` reads the YAML strictly (a duplicated key is an error; the merge key ``<<:`` works;
a syntax error names file, line and column, in the file or a ``--set`` value), applies
``--set dotted.key=value`` overrides (values parsed as YAML; a relative path set this way is relative
to the working directory, as on any command line, whatever the config), validates once
— each retriever's ``params`` become its type's ``Params`` model here, nowhere else — and turns any
failure into a :class:`rag.errors.ConfigError` naming the dotted key path (e.g.
``retrievers.bm25.params.k1``, see :mod:`rag.validation`) and what was expected; then it resolves
relative paths against the directory of the config file.

Names become directory and file names, so the run's ``name`` is one ``[A-Za-z0-9][A-Za-z0-9_.-]*``
word (``..`` or ``.`` cannot move a run out of ``output_dir``); a retriever's name is also a key in
paths such as ``retrievers.bm25.params.k1``, so it has no dots: ``[A-Za-z0-9][A-Za-z0-9_-]*``.
``output_dir`` and ``cache_dir`` may not be the file-system root: a run there would create
top-level folders (``/smoke``, ``/index``), which is never intended (typically an empty variable in a
path); refusing it is safer than guessing another place.

Defaults: ``top_k`` 10, ``cache_dir`` ``~/.cache/rag-bench`` (override it per config; the built-in
configs use ``.cache/`` in the working directory), ``output_dir`` ``runs`` next to the config file
(``runs`` in the working directory for a built-in config, :mod:`rag.resources`).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path, PurePath
from typing import Annotated, Any, Literal, Union

import yaml
from pydantic_core import to_jsonable_python
from pydantic import (
    BaseModel, Field, PositiveInt, RootModel, SerializeAsAny, TypeAdapter, ValidationError,
    ValidationInfo, field_validator, model_validator,
)

from evaluation.stats import DEFAULT_MARGIN
from rag.baselines import BASELINES
from rag.chunking import ChunkingConfig
from rag.data import DatasetConfig
from rag.errors import ConfigError
from rag.generation import GeneratorConfig
from rag.generation.config import LocalGeneratorConfig, OpenAIGeneratorConfig
from rag.io_utils import name_text
from rag.resources import builtin_config, builtin_config_names, is_builtin_config
from rag.retrievers.base import RETRIEVERS, RetrieverParams
from rag.validation import ENTRY_NAME_PATTERN, ConfigModel, config_error_from_validation, entry_label

log = logging.getLogger(__name__)

DEFAULT_CACHE_DIR = Path("~/.cache/rag-bench")
MAX_RESAMPLES = 1_000_000  # bootstrap and sign-flip resamples: time and memory grow with resamples x questions
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]*$"


class RetrieverSpec(ConfigModel):
    """One configured retrieval method: a unique ``name`` (used in reports), a registered ``type``
    (``dense``, ``bm25``, ``rrf``, ``convex``, ...) and that type's parameters, validated into the
    type's own ``Params`` model when the config is loaded."""

    name: str = Field(pattern=ENTRY_NAME_PATTERN)
    type: str
    params: SerializeAsAny[RetrieverParams]


class GenerationSection(ConfigModel):
    """Answer generation from each method's top chunks.

    ``questions_per_set``: LLM answers for a seeded sample of this many questions per question set
    (the same questions for every method, so paired tests stay paired); ``null`` = all questions.
    ``question_sets``: the sets that get answers (default: every set of the run), so the answer budget
    can go where references are short and verifiable. Each method's top-k chunks are the contexts; the generator's own ``max_chunks`` and
    ``context_token_budget`` bound what enters the prompt.
    """

    generator: GeneratorConfig
    questions_per_set: PositiveInt | None = None
    question_sets: list[str] | None = Field(None, min_length=1)


class StagesSampleSection(ConfigModel):
    """The questions that methods calling an LLM per question (query transforms, LLM rerankers:
    ``llm_calls_per_query() > 0``, themselves or through an input) run on when ``generation`` is off:
    a seeded sample of ``questions_per_set`` per set of ``question_sets`` (default every set), drawn
    as the answer sample is (:func:`rag.runner.answers.answer_sample`). With ``generation`` on, they
    run on its answer sample instead, so their answers are compared too. Default 30: the fewest
    questions a set needs before the headline stops calling it too few (rag/results/headline.py).
    docs/evaluation.md, "Methods that call an LLM"."""

    questions_per_set: PositiveInt = 30
    question_sets: list[str] | None = Field(None, min_length=1)


class EvaluationSection(ConfigModel):
    """Metric names follow :func:`evaluation.evaluate_run` (``mrr``, ``recall@10``, ``ndcg@10``,
    ``map@10``, ``p@10``, ``hit@10``); ``levels`` lists the evaluation levels (``url`` = document
    level via ``chunk.url``, ``chunk`` = chunks of the gold documents are relevant). ``ties``: ``id``
    evaluates each list in the order its retriever returned it (the one tie rule: score, then chunk
    id descending, as trec_eval); ``expected`` takes every metric's expected value over all orders of
    equally scored items (McSherry & Najork 2008). Paired tests:
    sign-flip randomization (t-test p-values reported alongside), ``correction`` across the method
    pairs of one metric and question set (``n_resamples`` at most :data:`MAX_RESAMPLES`: the work grows
    with resamples x questions). ``answer_in_context``: the cut-offs k of
    ``answer_in_context@k`` (a reference answer in the top-k chunks; default ``[top_k]``).
    ``judge``: an optional LLM judge of the answers (off by default): a generator config of type
    ``openai`` (any OpenAI-compatible endpoint) or ``local`` (rag/generation/judge.py; its verdict is
    the ``judge`` answer metric, its agreement with match and EM is reported).
    ``primary``: the URL-level metric the recommendation reads (default ``ndcg@top_k`` when measured,
    else the first metric; docs/evaluation.md, "Recommendation"). ``margin``: the smallest difference on
    the primary metric that matters (default 0.02; docs/evaluation.md, "The margin"): methods within it
    are equivalent, a cheaper one not worse by more is chosen."""

    metrics: list[str] = Field(
        default_factory=lambda: ["mrr@10", "recall@10", "ndcg@10", "map@10", "p@10", "hit@10"], min_length=1
    )
    levels: list[Literal["url", "chunk"]] = Field(default_factory=lambda: ["url"], min_length=1)
    convention: Literal["trec", "autorag"] = "trec"
    ties: Literal["id", "expected"] = "id"
    answer_normalization: Literal["squad", "seed"] = "squad"
    confidence: float = Field(default=0.95, gt=0.0, lt=1.0)
    n_resamples: int = Field(default=10000, gt=0, le=MAX_RESAMPLES)
    correction: Literal["holm", "none"] = "holm"
    alpha: float = Field(default=0.05, gt=0.0, lt=1.0)
    margin: float = Field(default=DEFAULT_MARGIN, gt=0.0, lt=1.0)
    answer_in_context: list[PositiveInt] | None = Field(default=None, min_length=1)
    primary: str | None = None
    judge: Annotated[Union[OpenAIGeneratorConfig, LocalGeneratorConfig], Field(discriminator="type")] | None = None

    @field_validator("metrics")
    @classmethod
    def _known_metrics(cls, metrics: list[str]) -> list[str]:
        from evaluation.metrics import parse_metric

        return [parse_metric(metric).column for metric in metrics]

    @field_validator("primary")
    @classmethod
    def _primary_measured(cls, primary: str | None, info: ValidationInfo) -> str | None:
        from evaluation.metrics import parse_metric

        if primary is None:
            return None
        column = parse_metric(primary).column
        measured = info.data.get("metrics") or []
        if column not in measured:
            raise ValueError(f"{primary!r} is not among evaluation.metrics {measured}; expected one of them")
        return column


class RunConfig(ConfigModel):
    """A whole benchmark run."""

    name: str = Field(pattern=NAME_PATTERN)
    seed: int = Field(default=0, ge=0)
    dataset: DatasetConfig
    question_sets: list[str] | None = Field(None, min_length=1)
    limit: PositiveInt | None = None
    chunking: ChunkingConfig = Field(default_factory=ChunkingConfig)
    retrievers: list[RetrieverSpec] = Field(min_length=1)
    methods: list[str] | None = Field(None, min_length=1)
    baselines: list[str] = Field(default_factory=list)  # answer-only methods (rag.baselines)
    top_k: PositiveInt = 10
    depth: PositiveInt = 100
    generation: GenerationSection | None = None
    stages_sample: StagesSampleSection = Field(default_factory=StagesSampleSection)
    evaluation: EvaluationSection = Field(default_factory=EvaluationSection)
    output_dir: Path = Path("runs")
    cache_dir: Path = DEFAULT_CACHE_DIR

    @field_validator("retrievers", mode="before")
    @classmethod
    def _typed_params(cls, specs: Any) -> Any:
        """Validate each retriever's ``params`` with its registered type's ``Params``. Raises
        :class:`ConfigError` directly (pydantic lets non-ValueError exceptions through), so the key
        path points inside ``params`` and the allowed keys are the type's own."""
        if not isinstance(specs, list):
            return specs
        typed = []
        for index, raw in enumerate(specs):
            if isinstance(raw, Mapping) and isinstance(raw.get("type"), str):
                prefix = f"retrievers.{entry_label(raw, index)}"
                params_class = RETRIEVERS.get(raw["type"], key=f"{prefix}.type").Params
                params = raw.get("params") or {}
                try:
                    raw = {**raw, "params": params_class.model_validate(params)}
                except ValidationError as exc:
                    raise config_error_from_validation(exc, params, params_class, prefix=f"{prefix}.params") from None
            typed.append(raw)
        return typed

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
    def _fusion_inputs_configured(self) -> "RunConfig":
        names = {spec.name for spec in self.retrievers}
        for spec in self.retrievers:
            missing = [needed for needed in spec.params.requires() if needed not in names]
            if missing:
                raise ConfigError(
                    f"retrievers.{spec.name}.params.{spec.params.inputs_key}",
                    f"retriever {spec.name!r} needs {missing}, which are not configured; "
                    f"expected names among {sorted(names)}",
                )
        cycle = fusion_cycle({spec.name: spec.params.requires() for spec in self.retrievers})
        if cycle:
            raise ConfigError(
                f"retrievers.{cycle[0]}.params.{self.retriever(cycle[0]).params.inputs_key}",
                f"the fusion inputs form a cycle ({' -> '.join(cycle)}); expected each fusion to fuse other "
                "retrievers, never itself, directly or through another fusion",
            )
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

    @model_validator(mode="after")
    def _answered_sets_in_run(self) -> "RunConfig":
        """``generation.question_sets`` and ``stages_sample.question_sets`` must name sets of the run
        (when the run names its sets)."""
        known = self.question_sets or getattr(self.dataset, "question_sets", None)
        for key, wanted in (("generation.question_sets", self.generation.question_sets if self.generation else None),
                            ("stages_sample.question_sets", self.stages_sample.question_sets)):
            unknown = [name for name in wanted or [] if name not in (known or wanted)]
            if unknown:
                raise ConfigError(key, f"unknown question set(s) {unknown}; expected names among {list(known)}")
        return self

    def retriever(self, name: str) -> RetrieverSpec:
        return next(spec for spec in self.retrievers if spec.name == name)


def bounded_by_chunks(config: RunConfig, n_chunks: int) -> RunConfig:
    """``config`` with ``depth``, each fusion's or rerank's own ``depth`` and each RM3 transform's
    ``fb_docs`` at most ``n_chunks``: no ranked list can hold more chunks than the corpus has, so the
    results are those of the configured values, and nothing is sized by a number the data cannot fill
    (``depth: 1000000`` on 49 chunks; ``fb_docs: 1000000000`` allocated 224 GiB)."""
    limit = max(n_chunks, 1)
    retrievers = []
    for spec in config.retrievers:
        params = spec.params
        if isinstance(getattr(params, "depth", None), int) and params.depth > limit:
            params = params.model_copy(update={"depth": limit})
        query = getattr(params, "query", None)
        if isinstance(getattr(query, "fb_docs", None), int) and query.fb_docs > limit:
            params = params.model_copy(update={"query": query.model_copy(update={"fb_docs": limit})})
        retrievers.append(spec if params is spec.params else spec.model_copy(update={"params": params}))
    return config.model_copy(update={"depth": min(config.depth, limit), "retrievers": retrievers})


def bounded_settings(config: RunConfig, bounded: RunConfig) -> list[str]:
    """The RM3 ``fb_docs`` that :func:`bounded_by_chunks` lowered, one line each, naming the setting,
    its value and the cap (the corpus's chunks)."""
    lines = []
    for spec, spec_bounded in zip(config.retrievers, bounded.retrievers):
        key = f"retrievers.{spec.name}.params"
        before, after = getattr(spec.params, "query", None), getattr(spec_bounded.params, "query", None)
        if getattr(before, "fb_docs", None) != getattr(after, "fb_docs", None):
            lines.append(f"{key}.query.fb_docs {before.fb_docs} exceeds the corpus's {after.fb_docs} chunks; "
                         f"bounded to {after.fb_docs}")
    return lines


def fusion_cycle(inputs: Mapping[str, Sequence[str]]) -> list[str]:
    """The first cycle of the retriever graph (name -> the names it fuses), found by depth-first
    search in config order, as a path that ends where it starts (``[rrf, rrf]``, ``[a, b, a]``);
    ``[]`` when there is none. Inputs that are not configured are skipped (reported elsewhere)."""
    done: set[str] = set()

    def visit(name: str, path: list[str]) -> list[str]:
        if name in path:
            return [*path[path.index(name):], name]
        if name in done or name not in inputs:
            return []
        for needed in inputs[name]:
            if cycle := visit(needed, [*path, name]):
                return cycle
        done.add(name)
        return []

    for name in inputs:
        if cycle := visit(name, []):
            return cycle
    return []


# --------------------------------------------------------------------------------------------------
# Loading, overrides, error conversion


def load_config(path: str | Path, overrides: Sequence[str] = ()) -> RunConfig:
    """Read a YAML config, apply ``dotted.key=value`` overrides, validate, resolve relative paths
    (see :func:`read_config_mapping`)."""
    raw, base_dir, source = read_config_mapping(path, overrides)
    return config_from_mapping(raw, base_dir=base_dir, source=source)


def read_config_mapping(path: str | Path, overrides: Sequence[str] = ()) -> tuple[dict[str, Any], Path, Path]:
    """The config's mapping with ``overrides`` applied (not yet validated), the directory its relative
    paths resolve against, and the file it came from (named in errors).

    ``path`` is a file, or else the name of a built-in config (``smoke``, ``wiki``; an existing file
    wins, see :mod:`rag.resources`, and a warning says so). A built-in config's relative ``output_dir``
    and ``cache_dir``, and every relative path an override sets (:func:`_anchor_overridden_paths`),
    are made absolute against the working directory here, so nothing lands in the installed package."""
    path = _config_file(Path(path))
    raw = read_yaml(path)
    if not isinstance(raw, dict):
        raise ConfigError(None, "expected a mapping of config keys at the top level", source=path)
    _anchor_overridden_paths(raw, [apply_override(raw, override) for override in overrides])
    if not is_builtin_config(path):
        return raw, path.parent, path
    raw.setdefault("output_dir", "runs")
    for key in ("output_dir", "cache_dir"):
        if isinstance(raw.get(key), str):
            raw[key] = str(Path.cwd() / Path(raw[key]).expanduser())
    return raw, path.resolve().parent, path  # configs/<name>.yaml in a checkout links to the package's file


def _config_file(path: Path) -> Path:
    builtin = builtin_config(str(path))
    if path.is_file():
        if builtin is not None and not is_builtin_config(path):
            log.warning("--config %s: the file %s here is read, not the built-in config %r of that name (an existing "
                        "file wins; rename or move the file to use the built-in)", path, path, builtin.stem)
        return path
    if builtin is not None:
        return builtin
    problem = "is a directory" if path.is_dir() else "file not found"
    raise ConfigError("--config", f"{problem}: {path}; expected a YAML run configuration or a built-in "
                                  f"config name ({', '.join(builtin_config_names())})")


MERGE_TAG = "tag:yaml.org,2002:merge"


class _StrictLoader(yaml.SafeLoader):
    """YAML's safe loader, with a duplicated mapping key as an error instead of "last one wins".
    The merge key ``<<: *anchor`` works as in YAML 1.1: the anchored mapping's keys are merged in,
    and a key written beside ``<<`` overrides the merged one (only keys written twice are errors)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        first_line: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == MERGE_TAG:
                continue
            key = self.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            if key in first_line:
                raise ConfigError(
                    str(key), f"duplicate key (first defined on line {first_line[key]}); expected each key once",
                    source=self.name, line=line, column=key_node.start_mark.column + 1,
                )
            first_line[key] = line
        return super().construct_mapping(node, deep=deep)  # SafeLoader's: flattens the merge keys first


def parse_yaml(text: str, source: str) -> Any:
    """The YAML document in ``text`` (strict, see :class:`_StrictLoader`); a syntax error or a
    duplicated key is a one-line ConfigError naming ``source`` (a file, or ``--set KEY``), line and
    column."""
    loader = _StrictLoader(text)
    loader.name = source
    try:
        return loader.get_single_data()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = " ".join(" ".join(part.split()) for part in (exc.context, exc.problem) if part) or "syntax error"
        raise ConfigError(None, f"not valid YAML: {problem}", source=source,
                          line=mark.line + 1 if mark else None, column=mark.column + 1 if mark else None) from None
    except yaml.YAMLError as exc:
        raise ConfigError(None, f"not valid YAML: {' '.join(str(exc).split())}", source=source) from None
    finally:
        loader.dispose()


def read_yaml(path: Path) -> Any:
    """The YAML document in ``path`` (:func:`parse_yaml`); text that is not UTF-8 is a ConfigError."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(None, f"not valid UTF-8 text ({exc.reason} at byte {exc.start})", source=path) from None
    return parse_yaml(text, str(path))


def config_from_mapping(raw: Mapping[str, Any], base_dir: Path, source: str | Path | None = None) -> RunConfig:
    """Validate a config mapping; relative paths resolve against ``base_dir``."""
    try:
        config = RunConfig.model_validate(dict(raw))
    except ValidationError as exc:
        raise config_error_from_validation(exc, raw, RunConfig, source=source) from None
    except ConfigError as exc:  # raised by the retriever checks, which know no file name
        raise ConfigError(exc.key, exc.problem, source) from None
    config = resolve_paths(config, base_dir.resolve())
    for key in ("output_dir", "cache_dir"):
        directory = getattr(config, key)
        if directory.parent == directory:
            raise ConfigError(key, f"{directory} is the file-system root; expected a directory of its own "
                                   "(e.g. runs/ or .cache/)", source)
    return config


def with_retrievers(config: RunConfig, entries: Sequence[Mapping[str, Any]], source: str) -> RunConfig:
    """``config`` with more retriever entries (``{name, type, params}`` mappings, their paths absolute),
    validated as the config file's own would be (a repeated name, an unknown type or parameter is a
    :class:`ConfigError` naming ``source``, e.g. ``--run``); when ``methods`` picks the evaluated
    methods, the new ones are added to it."""
    if not entries:
        return config
    raw = config.model_dump(mode="python")
    raw["retrievers"] = [*raw["retrievers"], *(dict(entry) for entry in entries)]
    if raw.get("methods"):
        raw["methods"] = [*raw["methods"], *(entry["name"] for entry in entries)]
    try:
        return RunConfig.model_validate(raw)
    except ValidationError as exc:
        raise config_error_from_validation(exc, raw, RunConfig, source=source) from None
    except ConfigError as exc:
        raise ConfigError(exc.key, exc.problem, source) from None


def apply_override(raw: dict[str, Any], override: str) -> tuple[str | int, ...]:
    """Set ``a.b.0.c=value`` in the raw mapping. The value is parsed as YAML (``3`` is an int,
    ``[a, b]`` a list, ``null`` None). A list element is addressed by index or, for lists of
    mappings with a ``name`` (the retrievers), by that name. Returns where the value was set (a
    list element by its index)."""
    key, sep, text = override.partition("=")
    if not sep or not key.strip():
        raise ConfigError("--set", f"{override!r}: expected dotted.key=value")
    value = parse_yaml(text, f"--set {key.strip()}")
    parts = key.strip().split(".")
    node: Any = raw
    location: list[str | int] = []
    for depth, part in enumerate(parts):
        last = depth == len(parts) - 1
        where = ".".join(parts[: depth + 1])
        location.append(part)
        if isinstance(node, list):
            index = location[-1] = _list_index(node, part, where)
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
    return tuple(location)


def _anchor_overridden_paths(raw: dict[str, Any], locations: Sequence[tuple[str | int, ...]]) -> None:
    """Each relative path value of the config at or under a location an override set is written back
    into ``raw`` made absolute against the working directory (``--set dataset.path=docs`` means
    ./docs, not docs next to the config file, nor inside the package for a built-in config). Which
    values are paths is known from the top-level section validated on its own (the config is still
    validated once, by :func:`config_from_mapping`, which reports what is invalid; a retriever's
    ``params``, validated only there, hold no path)."""
    sections = {location[0] for location in locations if isinstance(location[0], str)}
    typed = {}
    for name in sections & set(RunConfig.model_fields) & set(raw):
        try:
            typed[name] = TypeAdapter(RunConfig.model_fields[name].annotation).validate_python(raw[name])
        except (ValidationError, ConfigError):
            continue

    def anchor(location: tuple[str | int, ...], path: Path) -> Path:
        if not path.expanduser().is_absolute() and any(location[: len(set_at)] == set_at for set_at in locations):
            *parents, last = location
            node: Any = raw
            for part in parents:
                node = node[part] if isinstance(node, list) or part in node else None
                if not isinstance(node, (dict, list)):
                    return path
            if isinstance(node, list) or last in node:
                node[last] = str((Path.cwd() / path.expanduser()).resolve())
        return path

    map_paths(typed, anchor)


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


def resolve_paths(model: BaseModel, base_dir: Path) -> Any:
    """A copy of ``model`` with every relative ``Path`` value (at any depth) made absolute against
    ``base_dir``; ``~`` is expanded."""

    def resolve(location: tuple[str | int, ...], value: Path) -> Path:
        value = value.expanduser()
        return value if value.is_absolute() else (base_dir / value).resolve()

    return map_paths(model, resolve)


def map_paths(value: Any, function: Callable[[tuple[str | int, ...], Path], Path],
              location: tuple[str | int, ...] = ()) -> Any:
    """A copy of ``value`` (models, lists, tuples, dicts at any depth) with each ``Path`` replaced by
    ``function(location, path)``; a location is the keys and list indexes that lead to the value in
    the config's mapping (a root model such as ``DatasetConfig`` adds no key)."""
    if isinstance(value, Path):
        return function(location, value)
    if isinstance(value, BaseModel):
        fields = type(value).model_fields
        updates = {name: map_paths(getattr(value, name), function,
                                   location if isinstance(value, RootModel) else (*location, name)) for name in fields}
        return value.model_copy(update=updates)
    if isinstance(value, (list, tuple)):
        return type(value)(map_paths(item, function, (*location, index)) for index, item in enumerate(value))
    if isinstance(value, dict):
        return {key: map_paths(item, function, (*location, key)) for key, item in value.items()}
    return value


def portable_path(path: PurePath, start: Path | None = None) -> str:
    """``path`` for the files and lines a run writes: relative to ``start`` (default: the working
    directory) in POSIX form, so that no absolute path of the user's machine is written, in the one
    text form of file names (:func:`rag.io_utils.name_text`)."""
    start = Path.cwd() if start is None else start
    return name_text(Path(os.path.relpath(path, start)).as_posix() if path.is_absolute() else path.as_posix())


def config_record(config: BaseModel, start: Path | None = None) -> Any:
    """``config`` as JSON data for the files a run writes (plan.json, manifest.json), every path made
    :func:`portable_path`; a run resumed from the same directory has the same plan."""

    def portable(value: Any) -> Any:
        if isinstance(value, PurePath):
            return portable_path(value, start)
        if isinstance(value, dict):
            return {key: portable(item) for key, item in value.items()}
        if isinstance(value, (list, tuple)):
            return [portable(item) for item in value]
        return value

    return to_jsonable_python(portable(config.model_dump(mode="python")))
