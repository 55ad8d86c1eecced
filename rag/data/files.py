"""The ``files`` data set: a folder of documents, one document per file (docs/data.md, "A folder of files").

The folder is walked in sorted order without following links to folders. A file is read when its path
relative to the folder (POSIX form) matches an ``include`` glob and no ``exclude`` glob (nor does one
of its parent folders); ``**`` spans folders, ``*`` and ``?`` stay within one name and, as in a shell,
do not match a leading ``.``. Its text comes from the converter of its suffix (:mod:`rag.data.convert`).

A document's ``doc_id`` and ``url`` are its relative path, never an absolute one, in the one text
form of file names (:func:`rag.io_utils.name_text`: a byte that is not UTF-8 is written ``\\xNN``);
its title is the converter's (front matter, HTML ``<title>``, PDF or DOCX metadata), else the first
heading, else the file name without suffix.

Files are converted in the folder's order, cached per content under ``<cache_dir>/converted`` when the
loader has a cache folder, and by worker processes when many need converting
(:mod:`rag.data.conversions`); a progress bar counts them. A library's warning while a file is
converted (a log record, or a Python warning such as Beautiful Soup's on XML named ``.html``) is printed
with the file's relative path in front, on every load, the cached ones too.

Files with the same bytes as a file read before them (a link to it, a copy) are read once: the later
ones are listed in ``Dataset.duplicates`` (duplicate -> the file kept), never indexed. Files a
documentation tool generated beside its pages (Sphinx's index and search pages and ``_sources/``
copies, Doxygen's, Javadoc's and rustdoc's indices and source listings: :mod:`rag.data.generated`),
pages that hold nothing but a tool's furniture (DocBook's and Texinfo's index pages:
``Converted.generated_by``), and HTML pages that only redirect the browser to another page
(:func:`rag.data.convert.redirect_target`: :data:`REDIRECT`), are left out and listed in ``Dataset.generated`` (file -> tool), unless
``generated_pages: keep``. Lines found
at the same edge (the top or the bottom) of most of the folder's documents (:mod:`rag.data.boilerplate`)
are dropped after conversion; what the converters' cleaning rules and that rule dropped is counted in
``Dataset.cleaning``, the lines dropped listed in ``Dataset.boilerplate``. Then a page held again in another format (a twin:
:mod:`rag.data.near_duplicates`) is left out, unless ``near_duplicates: keep``; twins and the
compilations of pages found (kept) are listed in ``Dataset.near_duplicates`` and named in a warning
line each. A gold URL naming a file left out as a copy (a duplicate, a twin) is read as the file kept.

Files that cannot be read are skipped, each printed as one warning line and counted by kind in
``Dataset.skipped`` (listed in ``Dataset.skipped_examples``), or, with ``dataset.strict``, the first
one is a :class:`rag.errors.DataError`. Kinds: ``too_large`` (over ``max_file_mb`` MiB),
``binary``, ``non_utf8``, ``empty``, ``encrypted``, ``no_text`` (an image-only PDF), ``unreadable``
(a damaged file, or one the system refuses to open), ``unsupported`` (no converter for the suffix),
``not_regular`` (a named pipe, socket or device: never opened, as opening a pipe waits for a writer),
``too_complex`` (more work than a file may take: :data:`rag.data.convert.MAX_BLOCKS`, ``MAX_PAGES``),
``symlink_loop``, ``link_outside`` (a link to a file outside the folder: never read, so a folder
cannot pull in other files of the machine) and ``link_to_folder`` (links to folders are not followed).
"""

from __future__ import annotations

import logging
import os
import re
import stat
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from rag.data.boilerplate import drop_furniture, furniture, lines
from rag.data.config import FilesDatasetConfig
from rag.data.conversions import ConversionCache, FileBytes, FolderConverter
from rag.data.convert import CONVERTERS, UNREADABLE, Unreadable
from rag.data.generated import Tool, generated_here
from rag.data.loaders import (
    DATASET_LOADERS, Dataset, DatasetLoader, questions_files, read_question_files, resolve_path,
)
from rag.data.near_duplicates import near_duplicates
from rag.data.records import ProblemLog
from rag.text.sections import first_heading
from rag.errors import DataError
from rag.io_utils import name_text, sha256_bytes
from rag.progress import progress
from rag.types import Document

log = logging.getLogger(__name__)

#: How many files a warning of the load names (files left out as generated or near-duplicates; the manifest lists all).
FILES_NAMED = 5
TOO_LARGE = "too_large"
UNSUPPORTED = "unsupported"
SYMLINK_LOOP = "symlink_loop"
LINK_OUTSIDE = "link_outside"
LINK_TO_FOLDER = "link_to_folder"
NOT_REGULAR = "not_regular"
MAX_LISTED = 1000  # skipped files listed by name in Dataset.skipped_examples (all are counted)
#: What ``Dataset.generated`` names for an HTML page that only redirects (:func:`rag.data.convert.redirect_target`).
REDIRECT = "redirect"
BOILERPLATE_LISTED = 20  # repeated lines listed in Dataset.boilerplate (all are counted)
MIB = 1 << 20


def glob_regex(pattern: str) -> re.Pattern[str]:
    """A compiled regex for a glob over relative POSIX paths (see the module docstring)."""
    parts: list[str] = []
    segments = pattern.strip("/").split("/")
    for index, segment in enumerate(segments):
        last = index == len(segments) - 1
        if segment == "**":
            parts.append(r"(?:(?!\.)[^/]*(?:/(?!\.)[^/]*)*)?" if last else r"(?:(?!\.)[^/]+/)*")
            continue
        piece = r"(?!\.)" if segment[:1] in ("*", "?", "[") else ""
        i = 0
        while i < len(segment):
            char = segment[i]
            if char == "*":
                piece += r"[^/]*"
            elif char == "?":
                piece += r"[^/]"
            elif char == "[" and (close := segment.find("]", i + 2)) != -1:
                body = segment[i + 1 : close]
                piece += "[" + ("^" + re.escape(body[1:]) if body[0] in "!^" else re.escape(body)) + "]"
                i = close
            else:
                piece += re.escape(char)
            i += 1
        parts.append(piece + ("" if last else "/"))
    return re.compile("".join(parts) + r"\Z")


class PathFilter:
    """``include`` and ``exclude`` globs of a files data set."""

    def __init__(self, include: list[str], exclude: list[str]):
        self.include = [glob_regex(pattern) for pattern in include]
        self.exclude = [glob_regex(pattern) for pattern in exclude]

    def excluded(self, relative: str) -> bool:
        """True when ``relative`` or one of its parent folders matches an exclude glob."""
        path = PurePosixPath(relative)
        return any(rx.match(str(p)) for rx in self.exclude for p in (path, *list(path.parents)[:-1]))

    def wanted(self, relative: str) -> bool:
        return any(rx.match(relative) for rx in self.include) and not self.excluded(relative)


def walk(root: Path, paths: PathFilter, generated: dict[str, str] | None = None
         ) -> Iterator[tuple[str, Path, Unreadable | None]]:
    """``(relative path, path, problem or None)`` of each wanted file in sorted order, and of each
    link that is not followed (with its problem). With ``generated`` (a dict), the wanted files a
    documentation tool generated (:mod:`rag.data.generated`) are put in it (file -> tool) instead
    of yielded."""
    builds: dict[Path, Tool | None] = {}  # folder -> the tool whose build it is or lies in
    for folder, dirnames, filenames in os.walk(root, followlinks=False):
        here = Path(folder)
        links = [name for name in dirnames if (here / name).is_symlink()]
        dirnames[:] = sorted(name for name in dirnames if name not in links)
        tool, tool_folders, tool_files = (generated_here(here, dirnames, filenames, builds.get(here.parent))
                                          if generated is not None else (None, [], []))
        builds[here] = tool
        for name in tool_folders:
            dirnames.remove(name)
            inside = (name_text((Path(sub) / file).relative_to(root).as_posix())
                      for sub, _, files in os.walk(here / name, followlinks=False) for file in files)
            generated.update((relative, tool.name) for relative in sorted(inside) if paths.wanted(relative))
        for name in sorted([*links, *filenames]):
            relative = name_text((here / name).relative_to(root).as_posix())
            if name in links:
                if not name.startswith(".") and not paths.excluded(relative):
                    yield relative, here / name, _folder_link_problem(here / name)
            elif paths.wanted(relative):
                if name in tool_files:
                    generated[relative] = tool.name
                else:
                    yield relative, here / name, None


def _folder_link_problem(path: Path) -> Unreadable:
    try:
        target = path.resolve(strict=True)
    except (OSError, RuntimeError):
        return Unreadable(SYMLINK_LOOP, "a symbolic link loop")
    if path.parent.resolve().is_relative_to(target):
        return Unreadable(SYMLINK_LOOP, "a link to a folder that contains it (a loop)")
    return Unreadable(LINK_TO_FOLDER, "a link to a folder; links to folders are not followed")


def read_file(path: Path, root: Path, max_bytes: int) -> tuple[bytes, str]:
    """The bytes of a wanted file and its lower-cased suffix, or :class:`Unreadable`."""
    if path.is_symlink():
        try:
            target = path.resolve(strict=True)
        except (OSError, RuntimeError):
            raise Unreadable(SYMLINK_LOOP, "a symbolic link loop (or a link to nothing)") from None
        if not target.is_relative_to(root):
            raise Unreadable(LINK_OUTSIDE, "a link to a file outside the folder; not read")
        path = target
    suffix = path.suffix.lower()
    if suffix not in CONVERTERS:
        raise Unreadable(UNSUPPORTED, f"no converter for {suffix or 'files without a suffix'}; "
                         f"expected one of {', '.join(sorted(CONVERTERS))}")
    try:
        status = path.stat()
        if not stat.S_ISREG(status.st_mode):
            raise Unreadable(NOT_REGULAR, f"{_file_type(status.st_mode)}, not a regular file; not opened")
        size = status.st_size
        if size > max_bytes:
            raise Unreadable(TOO_LARGE, f"{size / MIB:.1f} MiB, over dataset.max_file_mb ({max_bytes / MIB:g} MiB)")
        return path.read_bytes(), suffix
    except OSError as exc:
        raise Unreadable(UNREADABLE, f"cannot be opened: {exc.strerror or type(exc).__name__}") from None


@dataclass(frozen=True)
class WalkedFile:
    """A file the walk found: its relative path and path, its suffix once read, and why it cannot be
    read."""

    relative: str
    path: Path
    suffix: str = ""
    problem: Unreadable | None = None


def _read_files(walked: list[tuple[str, Path, Unreadable | None]], root: Path, max_bytes: int,
                duplicates: dict[str, str]) -> Iterator[tuple[WalkedFile, FileBytes | None]]:
    """Each walked file with its bytes to convert, or with none (it cannot be read, or it has the
    bytes of a file read before it: then it is put in ``duplicates``)."""
    seen: dict[str, str] = {}  # SHA-256 of a file's bytes -> the first file read with them
    for relative, path, problem in walked:
        try:
            if problem is not None:
                raise problem
            data, suffix = read_file(path, root, max_bytes)
        except Unreadable as exc:
            yield WalkedFile(relative, path, problem=exc), None
            continue
        digest = sha256_bytes(data)
        if digest in seen:
            duplicates[relative] = seen[digest]
            log.info("%s has the same content as %s: read once", relative, seen[digest])
            yield WalkedFile(relative, path, suffix), None
            continue
        seen[digest] = relative
        yield WalkedFile(relative, path, suffix), FileBytes(data, suffix, digest)


def _file_type(mode: int) -> str:
    kinds = [(stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
             (stat.S_ISBLK, "a block device")]
    return next((name for test, name in kinds if test(mode)), "a special file")


@DATASET_LOADERS.register("files")
class FilesLoader(DatasetLoader):
    """A folder of documents (see the module docstring)."""

    def load(self, config: FilesDatasetConfig, base_dir: Path, problems: ProblemLog) -> Dataset:
        root = resolve_path(config.path, base_dir).resolve()
        if not root.is_dir():
            raise DataError(config.path, "not a folder; expected the folder of documents (dataset.path)")
        skipped = ProblemLog(skip_invalid=not config.strict, max_examples=MAX_LISTED)
        documents, read = [], []
        duplicates: dict[str, str] = {}
        cleaning: Counter[str] = Counter()
        generated: dict[str, str] | None = {} if config.generated_pages == "drop" else None
        walked = list(walk(root, PathFilter(config.include, config.exclude), generated))
        converter = FolderConverter(None if self.cache_dir is None else ConversionCache(self.cache_dir / "converted"))
        files = _read_files(walked, root, int(config.max_file_mb * MIB), duplicates)
        for found, conversion in progress(converter.converted(files), total=len(walked), desc="reading files",
                                          unit="file"):
            relative, problem = found.relative, found.problem
            if conversion is not None:
                conversion.log_notes(relative)
                problem = None if conversion.unreadable is None else Unreadable(*conversion.unreadable)
            if problem is not None:
                strict = " (dataset.strict / --strict; without it the file is skipped)" if config.strict else ""
                skipped.report(relative, None, problem.kind, problem.reason + strict)
                log.warning("skipped %s: %s", relative, problem.reason)
                continue
            if conversion is None:  # a copy of a file read before it
                continue
            converted = conversion.converted
            if generated is not None and (by := REDIRECT if converted.redirect is not None else converted.generated_by):
                generated[relative] = by
                continue
            cleaning.update(converted.dropped)
            title = converted.title or first_heading(converted.text) or PurePosixPath(relative).stem
            documents.append(Document(relative, relative, title, converted.text, {"format": found.suffix[1:]}))
            read.append(found.path)
        for tool in sorted(set((generated or {}).values())):
            files = [relative for relative, by in generated.items() if by == tool]
            what = ("redirects, not pages (an HTML refresh at 0 s to another page" if tool == REDIRECT else
                    f"generated by {tool}, not pages (its indices, tables of contents, search and source pages")
            log.warning("%d files left out as %s; dataset.generated_pages: keep indexes them; docs/data.md): %s",
                        len(files), what, _first_named(files))
        documents, boilerplate = _without_boilerplate(documents, cleaning)
        found = near_duplicates(documents) if config.near_duplicates == "drop" else {}
        left_out = {url: why for url, why in found.items() if why.left_out}
        documents = [document for document in documents if document.url not in left_out]
        compilations = {url: why for url, why in found.items() if not why.left_out}
        for named, what in ((left_out, "files left out as the same page in another format (dataset.near_duplicates: "
                                       "keep indexes them; docs/data.md)"),
                            (compilations, "files indexed that hold the text of several others, so a question about "
                                           "those may be answered from either (dataset.exclude leaves them out)")):
            if named:
                log.warning("%d %s: %s", len(named), what, _first_named([why.describe(url) for url, why in named.items()]))
        if not documents:
            raise DataError(config.path, f"no readable file matches dataset.include {config.include}"
                            + (f" ({sum(skipped.counts.values())} skipped)" if skipped.counts else ""))
        question_files = questions_files(config.questions, base_dir) if config.questions is not None else {}
        aliases = {**duplicates, **{url: why.kept for url, why in left_out.items() if why.kept is not None}}
        questions = read_question_files(question_files, {document.url for document in documents}, problems, aliases)
        return Dataset(
            config.name or name_text(root.name), documents, questions.question_sets,
            skipped=dict(skipped.counts), skipped_examples=list(skipped.examples),
            source_files=[*read, *questions.files], source_root=root, question_provenance=questions.provenance,
            files_read=len(documents), files_skipped=sum(skipped.counts.values()),
            duplicates=duplicates, generated=generated or {}, near_duplicates=found, cleaning=dict(cleaning),
            boilerplate=boilerplate,
        )


def _first_named(names: list[str]) -> str:
    """The first :data:`FILES_NAMED` of ``names``, ``"; "``-joined, and ``"; ..."`` when there are more."""
    return "; ".join(names[:FILES_NAMED]) + ("; ..." if len(names) > FILES_NAMED else "")


def _without_boilerplate(documents: list[Document], cleaning: Counter[str]) -> tuple[list[Document], list[str]]:
    """The documents without the furniture lines found at the same edge of most of the folder's
    documents of their format (:mod:`rag.data.boilerplate`), counted in ``cleaning["boilerplate"]``;
    the first :data:`BOILERPLATE_LISTED` keys of those dropped."""
    formats = {document.metadata["format"] for document in documents}
    texts_lines = [lines(document.text) for document in documents]
    found = {fmt: furniture([text_lines for document, text_lines in zip(documents, texts_lines)
                             if document.metadata["format"] == fmt]) for fmt in formats}
    examples: list[str] = []
    cleaned = []
    for document, text_lines in zip(documents, texts_lines):
        text, dropped = drop_furniture(document.text, text_lines, found[document.metadata["format"]])
        if dropped:
            cleaning["boilerplate"] += dropped
            examples.extend(key for key in found[document.metadata["format"]].keys() if key not in examples)
        cleaned.append(Document(document.doc_id, document.url, document.title, text, document.metadata))
    return cleaned, examples[:BOILERPLATE_LISTED]
