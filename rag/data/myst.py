"""MyST Markdown (Sphinx's Markdown) to plain Markdown: directives and roles become their text or
disappear, never raw markup.

The block structure comes from markdown-it-py with the MyST plugins of mdit-py-plugins (the parser
myst-parser itself uses): a fenced block (```` ``` ```` or ``:::``) whose info string starts with
``{name}`` is a directive; its line range is replaced by

- nothing, for the directives of :data:`rag.data.rst.DROPPED` (``toctree`` ...) and those without content;
- a fenced code block, for ``code-block``/``code``/``sourcecode`` (the argument is its language);
- the reStructuredText of an ``eval-rst`` block converted by :func:`rag.data.rst.rst_to_markdown`;
- otherwise its argument as a paragraph (Sphinx's sentence for the version directives, as in
  :mod:`rag.data.rst`) and its content, itself converted as MyST; the directive's options
  (``:key: value`` lines or a ``---`` YAML block at its start) are dropped.

Targets (``(label)=``), ``%`` comments, block breaks (``+++``) and HTML comments disappear. A role
outside code, ``{name}`text```, becomes its text by :func:`rag.data.rst.role_text` (the rule Sphinx
shows cross-references by). Links and images outside code become their text, as the HTML converter
leaves them (``[text](url)``, ``![alt](src)``, and the reference forms ``[text][label]``, ``[text][]``,
``[text]`` where the label is defined), and link reference definitions (``[label]: url`` lines, which
CommonMark never shows) disappear: Node.js's API pages end in dozens of them. Backslash escapes
outside code (``XDG\\_CONFIG\\_HOME``, ``C:\\\\Users``) become the character they escape, as
CommonMark shows them (:func:`unescaped`): the reader and the sparse tokenizers see the identifier,
not a backslash that splits it; a ``\\#`` that starts a line keeps its backslash, so it never turns
into a heading. Everything else is kept line for line.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from functools import cache

from markdown_it import MarkdownIt
from markdown_it.common.utils import normalizeReference
from markdown_it.token import Token

from rag.data.rst import DROPPED, role_text, rst_to_markdown, version_sentence
from rag.text.sections import CODE_SPAN

CODE_DIRECTIVES = frozenset({"code-block", "code", "sourcecode"})
_DIRECTIVE_INFO = re.compile(r"^\{([A-Za-z][\w:.+-]*)\}\s*(.*)$", re.DOTALL)
_ROLE = re.compile(r"\{([A-Za-z][\w:.+-]*)\}`([^`]+)`")
_OPTION_LINE = re.compile(r"^:[\w-]+:(?:\s.*)?$")
_YAML_OPTIONS = re.compile(r"\A---[ \t]*\n.*?\n---[ \t]*(?:\n|\Z)", re.DOTALL)
_DROPPED_TOKENS = frozenset({"myst_target", "myst_line_comment", "myst_block_break", "front_matter"})
_DEFINITION = re.compile(r"^ {0,3}\[(?:[^\]\\]|\\.)+\]:")
_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")  # CommonMark: a backslash before ASCII punctuation
_LINK_TEXT = r"\[((?:[^\[\]\\]|\\.)*)\]"
_INLINE_LINK = re.compile(r"!?" + _LINK_TEXT + r"\(\s*(?:<[^>\n]*>|[^()\s]*(?:\([^()\s]*\)[^()\s]*)*)"
                          r"(?:\s+(?:\"[^\"]*\"|'[^']*'|\([^)]*\)))?\s*\)")
_REFERENCE_LINK = re.compile(r"!?" + _LINK_TEXT + r"(?:\[((?:[^\[\]\\]|\\.)*)\]|(?![(:]))")


@cache
def _parser() -> MarkdownIt:
    from mdit_py_plugins.colon_fence import colon_fence_plugin
    from mdit_py_plugins.front_matter import front_matter_plugin
    from mdit_py_plugins.myst_blocks import myst_block_plugin

    return MarkdownIt("commonmark").use(front_matter_plugin).use(myst_block_plugin).use(colon_fence_plugin)


def myst_to_markdown(text: str) -> str:
    """``text`` (MyST Markdown) with its directives, roles, targets and comments resolved (see the
    module docstring)."""
    lines = text.split("\n")
    replaced: dict[int, tuple[int, list[str]]] = {}  # first line -> (end line, new lines)
    code: set[int] = set()  # lines of code blocks kept verbatim
    covered = 0
    env: dict = {}
    tokens = _parser().parse(text, env)
    references = set(env.get("references", {}))
    if references:  # the definitions' lines: those no block token covers
        in_block = {line for token in tokens if token.map for line in range(*token.map)}
        definition = False
        for number, line in enumerate(lines):
            definition = number not in in_block and bool(line.strip()) and (definition or bool(_DEFINITION.match(line)))
            if definition:
                replaced[number] = (number + 1, [])
        del in_block
    for token in tokens:
        if token.map is None or token.map[0] < covered:
            continue
        start, end = token.map
        directive = _DIRECTIVE_INFO.match(token.info.strip()) if token.type in ("fence", "colon_fence") else None
        if directive:
            indent = re.match(r"[ \t]*", lines[start]).group(0)
            new = _directive(directive.group(1).lower(), directive.group(2).strip(), token)
            replaced[start] = (end, [indent + line if line else line for line in new.split("\n")] if new else [])
            covered = end
        elif token.type in _DROPPED_TOKENS or (token.type == "html_block" and token.content.lstrip().startswith("<!--")):
            replaced[start] = (end, [])
            covered = end
        elif token.type in ("fence", "code_block"):
            code.update(range(start, end))
            covered = end
    del tokens  # the token stream of a huge document is not kept while its text is rebuilt
    out: list[str] = []
    prose: list[str] = []  # consecutive lines outside code, where roles are resolved (a role may span lines)
    index = 0
    while index <= len(lines):
        if index == len(lines) or index in replaced or index in code:
            out.extend(unescaped(link_texts(_ROLE.sub(lambda m: role_text(m.group(2)), "\n".join(prose)), references))
                       .split("\n") if prose else [])
            prose = []
        if index == len(lines):
            break
        if index in replaced:
            end, new = replaced[index]
            out.extend(new)
            index = end
            continue
        (out if index in code else prose).append(lines[index])
        index += 1
    return "\n".join(out)


def link_texts(text: str, references: set[str]) -> str:
    """``text`` (Markdown prose) with each link and image outside a code span replaced by its text:
    inline ones always, reference ones where their label is among ``references`` (normalized labels)."""
    spans = [match.span() for match in CODE_SPAN.finditer(text)]  # sorted, disjoint

    def inline(match: re.Match) -> str:
        return match.group(0) if _inside(spans, match.start()) else match.group(1)

    def reference(match: re.Match) -> str:
        label = match.group(2) or match.group(1)
        known = normalizeReference(label) in references if label.strip() else False
        return match.group(1) if known and not _inside(spans, match.start()) else match.group(0)

    if "](" in text:
        text = _INLINE_LINK.sub(inline, text)
    if references:
        spans = [match.span() for match in CODE_SPAN.finditer(text)]
        text = _REFERENCE_LINK.sub(reference, text)
    return text


def _inside(spans: list[tuple[int, int]], position: int) -> bool:
    """Whether ``position`` falls in one of ``spans`` (sorted, disjoint ``(start, end)`` pairs)."""
    at = bisect_right(spans, (position, float("inf"))) - 1
    return at >= 0 and position < spans[at][1]


def unescaped(text: str) -> str:
    """``text`` (Markdown prose) with each backslash escape outside a code span replaced by the
    character it escapes, except a ``\\#`` that starts a line (it would read as a heading)."""
    if "\\" not in text:
        return text
    spans = [match.span() for match in CODE_SPAN.finditer(text)]  # sorted, disjoint

    def character(match: re.Match) -> str:
        if _inside(spans, match.start()):
            return match.group(0)
        if match.group(1) == "#" and not text[text.rfind("\n", 0, match.start()) + 1:match.start()].strip(" \t"):
            return match.group(0)
        return match.group(1)

    return _ESCAPE.sub(character, text)


def _directive(name: str, argument: str, token: Token) -> str:
    """The Markdown a directive's block becomes (see the module docstring)."""
    content = _without_options(token.content)
    if name in DROPPED:
        return ""
    if name in CODE_DIRECTIVES:
        fence = "`" * max(3, max((len(run) for run in re.findall(r"`+", content)), default=0) + 1)
        return f"{fence}{argument.split()[0] if argument else ''}\n{content.rstrip()}\n{fence}" if content.strip() else ""
    body = (rst_to_markdown(content) if name == "eval-rst" else myst_to_markdown(content)).strip() if content.strip() else ""
    if not body:
        return version_sentence(name, argument) or ""
    heading = version_sentence(name, argument) or argument
    return f"{heading}\n\n{body}" if heading else body


def _without_options(content: str) -> str:
    """A directive's content without its options: a leading ``---`` YAML block or ``:key: value`` lines."""
    match = _YAML_OPTIONS.match(content)
    if match:
        return content[match.end():]
    lines = content.split("\n")
    first = 0
    while first < len(lines) and _OPTION_LINE.match(lines[first].strip()):
        first += 1
    return "\n".join(lines[first:])
