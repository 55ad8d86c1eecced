"""What ships inside the package: the built-in run configs and the bundled data sets.

Layout (package data, found through :mod:`importlib.resources`, so a wheel or ``pip install .`` has
them wherever it is installed)::

    rag/resources/configs/<name>.yaml     built-in configs: ``rag-bench --config smoke``
    rag/resources/data/wiki/              the bundled Wikipedia set (``format: wiki``)
    rag/resources/data/smoke/             the 41-document smoke set
    rag/resources/reproduce/<name>.yaml   the reproduction matrix's conditions (``rag-bench reproduce``)

In a checkout, ``configs/smoke.yaml`` (and ``wiki.yaml``), ``data/wiki`` / ``data/smoke`` and
``reproduce/`` are symbolic links to these, so the repository's paths keep working and there is one copy of each file.

``--config X`` precedence: an existing file ``X`` wins; otherwise ``X`` (or ``X.yaml``) names a
built-in config. A built-in config's relative data paths resolve against its own directory (inside
the package); its relative ``output_dir`` and ``cache_dir`` resolve against the working directory,
so runs and caches never land in the installed package (:func:`is_builtin_config`).
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

_ROOT = resources.files(__name__)


def _directory(*parts: str) -> Path:
    """A real directory of this package (package data is installed as plain files, never zipped)."""
    return Path(str(_ROOT.joinpath(*parts)))


def configs_dir() -> Path:
    return _directory("configs")


def reproduce_dir() -> Path:
    """The reproduction matrix's condition files (:mod:`rag.reproduce.matrix`)."""
    return _directory("reproduce")


def data_dir(name: str) -> Path:
    """``rag/resources/data/<name>`` (``wiki``, ``smoke``)."""
    return _directory("data", name)


def builtin_config_names() -> list[str]:
    return sorted(path.stem for path in configs_dir().glob("*.yaml"))


def builtin_config(name: str) -> Path | None:
    """The built-in config called ``name`` (with or without ``.yaml``), or None."""
    stem = name.removesuffix(".yaml")
    if "/" in stem or "\\" in stem or stem not in builtin_config_names():
        return None
    return configs_dir() / f"{stem}.yaml"


def is_builtin_config(path: Path) -> bool:
    """True when ``path`` (after following symbolic links) is one of the built-in configs."""
    return path.resolve().parent == configs_dir().resolve()
