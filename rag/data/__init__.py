"""Data sets: the bundled Wikipedia corpus, our JSONL format, BEIR, a folder of files, and the live Wikipedia builder.

Public API::

    from rag.data import DatasetConfig, Dataset, load_dataset
    dataset = load_dataset(DatasetConfig(format="wiki"), skip_invalid=False, base_dir=None)
"""

from rag.data import beir as _beir  # noqa: F401  (registers the "beir" loader)
from rag.data import files as _files  # noqa: F401  (registers the "files" loader)
from rag.data.config import (
    WIKI_QUESTION_SETS, BeirDatasetConfig, DatasetConfig, FilesDatasetConfig, JsonlDatasetConfig, WikiDatasetConfig,
    bundled_wiki_dir,
)
from rag.data.loaders import DATASET_LOADERS, Dataset, DatasetLoader, load_dataset
from rag.data.records import ProblemLog, document_record, question_record, write_jsonl
from rag.data.urls import title_from_wiki_url, wiki_url

__all__ = [
    "WIKI_QUESTION_SETS", "BeirDatasetConfig", "DatasetConfig", "FilesDatasetConfig", "JsonlDatasetConfig", "WikiDatasetConfig",
    "bundled_wiki_dir", "DATASET_LOADERS", "Dataset", "DatasetLoader", "load_dataset", "ProblemLog",
    "document_record", "question_record", "write_jsonl", "title_from_wiki_url", "wiki_url",
]
