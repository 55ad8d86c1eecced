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
shows cross-references by). Everything else is kept line for line.
"""

from __future__ import annotations

import re
from functools import cache

from markdown_it import MarkdownIt
from markdown_it.token import Token

from rag.data.rst import DROPPED, role_text, rst_to_markdown, version_sentence

CODE_DIRECTIVES = frozenset({"code-block", "code", "sourcecode"})
_DIRECTIVE_INFO = re.compile(r"^\{([A-Za-z][\w:.+-]*)\}\s*(.*)$", re.DOTALL)
_ROLE = re.compile(r"\{([A-Za-z][\w:.+-]*)\}`([^`]+)`")
_OPTION_LINE = re.compile(r"^:[\w-]+:(?:\s.*)?$")
_YAML_OPTIONS = re.compile(r"\A---[ \t]*\n.*?\n---[ \t]*(?:\n|\Z)", re.DOTALL)
_DROPPED_TOKENS = frozenset({"myst_target", "myst_line_comment", "myst_block_break", "front_matter"})


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
    for token in _parser().parse(text):
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
    out: list[str] = []
    prose: list[str] = []  # consecutive lines outside code, where roles are resolved (a role may span lines)
    index = 0
    while index <= len(lines):
        if index == len(lines) or index in replaced or index in code:
            out.extend(_ROLE.sub(lambda m: role_text(m.group(2)), "\n".join(prose)).split("\n") if prose else [])
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
