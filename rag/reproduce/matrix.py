"""One condition of the reproduction matrix: a YAML file ``reproduce/<name>.yaml`` (the package's
``rag/resources/reproduce``; the checkout's ``reproduce/`` links there).

A condition says how its numbers are made (``source``) and lists rows of expected values:

- ``source: run``: ``command`` is the exact ``rag-bench run ...`` line; a row is one (question set,
  method) of the run's ``comparison.json`` and its ``expected`` maps a metric column of that table
  (``mrr@10``, ``f1``...) or a re-scoring of seed 003 (``seed003_mrr``, ``seed003_recall@10``:
  :mod:`rag.results.seed003`) to its value;
- ``source: metric_cases``: a row is one hand-made query (``ground_truth``, ``retrieved``, ``k``,
  ``convention``) scored by :func:`evaluation.retrieval_scores`; ``expected`` maps its metric keys.

Every row names one of the condition's ``tolerances``, each an absolute bound with the reason for it
(``why``): a cell passes when ``|measured - expected| <= abs``. Values are written to 6 decimals, so
an exact cell has ``abs: 5.0e-7`` (half a unit of the last written digit).

The files are read strictly (:func:`rag.config.read_yaml`: a duplicated key is an error) and every
problem is one :class:`rag.errors.ConfigError` naming the file and the dotted key.
"""

from __future__ import annotations

import re
import shlex
import stat
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, PositiveInt, ValidationError, field_validator

from rag.config import read_yaml
from rag.errors import ConfigError
from rag.io_utils import atomic_write_text
from rag.validation import ConfigModel, config_error_from_validation

CONDITION_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")
RESERVED_OPTIONS = ("--output-dir", "--resume")  # the driver chooses the run directory


def _a_number(value: Any) -> Any:
    """A YAML number, never a boolean (``true``) or a string (``"0.5"``), which lax parsing would take."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"expected a number, got {type(value).__name__} {value!r}")
    return value


#: A number as written in the file: an int or a float, not ``true`` nor ``"0.5"``.
Number = Annotated[float, BeforeValidator(_a_number)]


def rewrite_in_place(path: Path, text: str) -> None:
    """Replace ``path``'s text atomically, keeping its permission bits (a 0600 file stays 0600) and,
    when it is a symbolic link, the link: the file it points to is rewritten."""
    target = path.resolve()
    atomic_write_text(target, text, mode=stat.S_IMODE(target.stat().st_mode))


class Tolerance(ConfigModel):
    abs: Number = Field(ge=0)
    why: str = Field(min_length=1)


class _Rows(ConfigModel):
    """What both kinds of condition share: a title, the named tolerances, and the rows that use them."""

    title: str = Field(min_length=1)
    tolerances: dict[str, Tolerance] = Field(min_length=1)


class RunRow(ConfigModel):
    set: str
    method: str
    tolerance: str
    expected: dict[str, Number] = Field(min_length=1)

    @property
    def label(self) -> str:
        return f"{self.set}/{self.method}"


class ReadmeBlock(ConfigModel):
    """A README block printed from this condition's run (:mod:`rag.reproduce.readme`): ``results``
    (the result tables and verdicts, with ``metrics``), ``compact`` (the recommendation and one table
    of ``metrics[0]``, default the primary metric) or ``seed003`` (the reproduction table of question
    set ``set``)."""

    printer: Literal["results", "compact", "seed003"]
    metrics: list[str] = Field(default_factory=list)
    set: str = "seed_style"


class RunCondition(_Rows):
    source: Literal["run"]
    command: str
    rows: list[RunRow] = Field(min_length=1)
    readme: dict[str, ReadmeBlock] = Field(default_factory=dict)  # block name -> its printer

    @field_validator("readme")
    @classmethod
    def _block_names(cls, readme: dict[str, ReadmeBlock]) -> dict[str, ReadmeBlock]:
        for name in readme:
            if not CONDITION_NAME.match(name):
                raise ValueError(f"block name {name!r}: expected [A-Za-z0-9][A-Za-z0-9_-]*")
        return readme

    @field_validator("command")
    @classmethod
    def _a_run_command(cls, command: str) -> str:
        words = shlex.split(command)
        if words[:2] != ["rag-bench", "run"]:
            raise ValueError("expected a 'rag-bench run ...' command line")
        if reserved := [word for word in words if word.split("=")[0] in RESERVED_OPTIONS]:
            raise ValueError(f"{reserved[0]} is set by 'rag-bench reproduce' (each condition's own run directory)")
        return command

    @property
    def argv(self) -> list[str]:
        """The arguments of ``rag-bench run`` (the command without its first two words)."""
        return shlex.split(self.command)[2:]


class MetricCase(ConfigModel):
    case: str
    ground_truth: Any
    retrieved: list[str]
    k: PositiveInt | None = None
    convention: Literal["trec", "autorag"]
    tolerance: str
    expected: dict[str, Number] = Field(min_length=1)

    @property
    def label(self) -> str:
        return self.case


class CasesCondition(_Rows):
    source: Literal["metric_cases"]
    rows: list[MetricCase] = Field(min_length=1)

    @property
    def command(self) -> str:
        return "evaluation.retrieval_scores(ground_truth, retrieved, k, convention) for each row"


SOURCES: dict[str, type[RunCondition] | type[CasesCondition]] = {"run": RunCondition, "metric_cases": CasesCondition}


class Condition(ConfigModel):
    """A loaded condition: its name (the file's stem), its file, and its validated content."""

    name: str
    path: Path
    spec: RunCondition | CasesCondition


def load_condition(path: Path) -> Condition:
    """Read and validate one condition file; any problem is a ConfigError naming the file and key."""
    if not CONDITION_NAME.match(path.stem):
        raise ConfigError(None, "a condition's file name is its name: expected [A-Za-z0-9][A-Za-z0-9_-]*.yaml",
                          source=path)
    raw = read_yaml(path)
    if not isinstance(raw, dict):
        raise ConfigError(None, f"expected a mapping of keys (title, source, tolerances, rows), got "
                                f"{type(raw).__name__}", source=path)
    model = SOURCES.get(raw.get("source"))  # type: ignore[arg-type]
    if model is None:
        raise ConfigError("source", f"{raw.get('source')!r}: expected one of: {', '.join(SOURCES)}", source=path)
    try:
        spec = model.model_validate(raw)
    except ValidationError as exc:
        raise config_error_from_validation(exc, raw, model, source=path) from None
    seen: set[tuple[str, str]] = set()
    for index, row in enumerate(spec.rows):
        if row.tolerance not in spec.tolerances:
            raise ConfigError(f"rows.{index}.tolerance", f"{row.tolerance!r}: expected one of the tolerances "
                                                         f"({', '.join(spec.tolerances)})", source=path)
        for metric in row.expected:
            if (row.label, metric) in seen:
                raise ConfigError(f"rows.{index}.expected.{metric}", f"{row.label} {metric} is expected twice; "
                                                                     "expected each cell once", source=path)
            seen.add((row.label, metric))
    return Condition(name=path.stem, path=path, spec=spec)


def load_matrix(directory: Path) -> list[Condition]:
    """Every condition in ``directory``, in name order."""
    paths = sorted(directory.glob("*.yaml"))
    if not paths:
        raise ConfigError(None, "no reproduce/*.yaml condition files here", source=directory)
    return [load_condition(path) for path in paths]


def select(conditions: list[Condition], names: list[str]) -> list[Condition]:
    """The named conditions (all when ``names`` is empty); an unknown name lists the known ones."""
    known = {condition.name: condition for condition in conditions}
    for name in names:
        if name not in known:
            raise ConfigError("reproduce", f"unknown condition {name!r}; expected one of: {', '.join(known)}")
    return [known[name] for name in names] if names else conditions
