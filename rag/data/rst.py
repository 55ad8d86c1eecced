"""reStructuredText to Markdown-ish text through docutils' own parser: directives and roles become
their text or disappear, never raw markup.

The source is parsed by ``docutils.core.publish_doctree`` (no configuration files read, no file
inclusion, no raw passthrough, no messages) and the document tree is written back as text:

- a section's title is an ATX heading of its nesting depth (``#`` to ``######``);
- paragraphs, list items (``- `` / ``1. ``), definitions, fields, table rows (cells joined by
  ``" | "``) and admonitions keep their text; literal and doctest blocks become fenced code blocks;
- comments, targets, substitution definitions, system messages, raw blocks, images, ``meta``, the
  generated table of contents (``.. contents::``) and a field list that opens the document (Sphinx's
  file-wide metadata, ``:orphan:``) disappear.

Sphinx's directives and roles are not docutils' own. They are handled as Sphinx itself handles
unknown names while it parses, in a registry restored afterwards (``sphinx.util.docutils``'s
``docutils_namespace``):

- an unknown *role* becomes its text: ``:ref:`Title <target>``` -> ``Title``, ``:func:`~a.b.c``` -> ``c``,
  ``:doc:`install``` -> ``install`` (:func:`role_text`);
- an unknown *directive* without content disappears (it stands for text made at build time: a
  command's usage, its options, an included file); one of :data:`DROPPED` (whose content is a list of
  names: ``toctree``, ``autosummary``, ``index``) disappears too, and so does one whose content
  leaves no text (a tab holding only such directives); any other keeps its arguments as a
  paragraph (a tab's label, a signature) and its content, parsed as reStructuredText; options
  (``:maxdepth: 2``) are dropped. The version directives read as Sphinx renders them:
  ``.. versionadded:: 6.0`` -> "Added in version 6.0." (:func:`version_sentence`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

from docutils import nodes
from docutils.core import publish_doctree
from docutils.parsers.rst import Directive, directives, roles
from docutils.parsers.rst.languages import en

#: Directives whose content is a list of names, not text: dropped with their content.
DROPPED = frozenset({"toctree", "autosummary", "index", "literalinclude", "highlight", "currentmodule", "module",
                     "tabularcolumns", "only", "include"})
#: Sphinx's version directives and the sentence it renders for them.
VERSION_SENTENCES = {"versionadded": "Added in version {}.", "versionchanged": "Changed in version {}.",
                     "deprecated": "Deprecated since version {}.", "versionremoved": "Removed in version {}."}
SETTINGS = {
    "_disable_config": True, "report_level": 5, "halt_level": 5, "warning_stream": False,
    "file_insertion_enabled": False, "raw_enabled": False, "doctitle_xform": False,
    "sectsubtitle_xform": False, "syntax_highlight": "none", "smart_quotes": False,
}
_DIRECTIVE_NAME = re.compile(r"^[ \t]*\.\.[ \t]+([A-Za-z][\w:.+-]*)[ \t]*::", re.MULTILINE)
_ROLE_NAME = re.compile(r"(?<![\w`]):([A-Za-z][\w:.+-]*):`")
_EXPLICIT_TARGET = re.compile(r"^(.*?)\s*<[^<>]+>$", re.DOTALL)
_DROPPED_NODES = (nodes.comment, nodes.target, nodes.substitution_definition, nodes.system_message, nodes.raw,
                  nodes.image, nodes.pending, nodes.meta, nodes.transition, nodes.docinfo)


def role_text(text: str) -> str:
    """The text Sphinx shows for a cross-reference role's content: the title of ``Title <target>``,
    the last dotted part of ``~a.b.c``, the target itself otherwise (a leading ``!`` dropped)."""
    match = _EXPLICIT_TARGET.match(text)
    if match and match.group(1):
        return match.group(1)
    text = text.lstrip("!")
    return text[1:].rsplit(".", 1)[-1] if text.startswith("~") else text


def version_sentence(name: str, arguments: str) -> str | None:
    """Sphinx's sentence for a version directive (``versionadded`` etc.), None for other directives."""
    template = VERSION_SENTENCES.get(name)
    version = arguments.split()[0] if arguments.split() else ""
    return template.format(version) if template and version else None


class _AnyOptions(dict):
    """An option spec that accepts (and later drops) every option."""

    def __missing__(self, key: str):
        return directives.unchanged


def _generic_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    return [nodes.Text(role_text(text))], []


class _GenericDirective(Directive):
    """An unknown directive (see the module docstring)."""

    has_content = True
    optional_arguments = 1
    final_argument_whitespace = True
    option_spec = _AnyOptions()

    def run(self) -> list[nodes.Node]:
        if self.name in DROPPED or not self.content:
            return []
        container = nodes.container()
        self.state.nested_parse(self.content, self.content_offset, container)
        if not container.astext().strip():
            return []
        arguments = " ".join(self.arguments)
        heading = version_sentence(self.name, arguments) or arguments
        if heading:
            container.insert(0, nodes.paragraph(heading, heading))
        return [container]


class _VersionDirective(_GenericDirective):
    """A version directive: its sentence, even without content."""

    def run(self) -> list[nodes.Node]:
        if self.content:
            return super().run()
        sentence = version_sentence(self.name, " ".join(self.arguments))
        return [nodes.paragraph(sentence, sentence)] if sentence else []


@contextmanager
def _sphinx_names(text: str) -> Iterator[None]:
    """Generic handlers for the directive and role names of ``text`` that docutils does not know,
    registered for one parse and removed afterwards."""
    saved_directives, saved_roles = dict(directives._directives), dict(roles._roles)
    try:
        for name in set(_DIRECTIVE_NAME.findall(text)):
            lower = name.lower()
            if lower in DROPPED or (lower not in en.directives and lower not in directives._directive_registry):
                directives.register_directive(lower, _VersionDirective if lower in VERSION_SENTENCES else _GenericDirective)
        for name in set(_ROLE_NAME.findall(text)):
            lower = name.lower()
            if lower not in en.roles and lower not in roles._role_registry:
                roles.register_local_role(lower, _generic_role)
        yield
    finally:
        directives._directives.clear()
        directives._directives.update(saved_directives)
        roles._roles.clear()
        roles._roles.update(saved_roles)


def rst_to_markdown(text: str) -> str:
    """``text`` (reStructuredText) as Markdown-ish text (see the module docstring)."""
    with _sphinx_names(text):
        document = publish_doctree(text, settings_overrides=SETTINGS)
    first = next((child for child in document.children if not isinstance(child, _DROPPED_NODES)), None)
    if isinstance(first, nodes.field_list):
        document.remove(first)
    return "\n\n".join(_blocks(document, 0)).strip() + "\n"


def _blocks(node: nodes.Node, depth: int) -> list[str]:
    """The Markdown blocks of ``node``'s children; ``depth`` is the number of enclosing sections."""
    out: list[str] = []
    for child in node.children:
        out.extend(_block(child, depth))
    return out


def _block(node: nodes.Node, depth: int) -> list[str]:
    if isinstance(node, _DROPPED_NODES) or (isinstance(node, nodes.topic) and "contents" in node["classes"]):
        return []
    if isinstance(node, nodes.section):
        title = node.next_node(nodes.title)
        heading = [f"{'#' * min(depth + 1, 6)} {_inline(title)}"] if title is not None else []
        return heading + _blocks(node, depth + 1)
    if isinstance(node, nodes.title):
        return [] if isinstance(node.parent, nodes.section) else [_inline(node)]
    if isinstance(node, (nodes.literal_block, nodes.doctest_block)):
        language = next((c for c in node.get("classes", []) if c != "code"), "")
        body = node.astext()
        fence = "`" * max(3, max((len(run) for run in re.findall(r"`+", body)), default=0) + 1)
        return [f"{fence}{language}\n{body}\n{fence}"]
    if isinstance(node, (nodes.bullet_list, nodes.enumerated_list)):
        items = [item for item in node.children if isinstance(item, nodes.list_item)]
        start = node.get("start", 1)
        marks = ["- "] * len(items) if isinstance(node, nodes.bullet_list) else [f"{start + i}. " for i in range(len(items))]
        return ["\n".join(_item(mark, _blocks(item, depth)) for mark, item in zip(marks, items))]
    if isinstance(node, nodes.table):
        return ["\n".join(" | ".join(" ".join(entry.astext().split()) for entry in row.children)
                          for row in node.findall(nodes.row))]
    if isinstance(node, (nodes.field, nodes.option_list_item, nodes.definition_list_item)) and node.children:
        head, *rest = node.children
        return [_inline(head) + ":" if isinstance(node, nodes.field) else _inline(head), *_blocks_of(rest, depth)]
    if isinstance(node, (nodes.paragraph, nodes.rubric, nodes.caption, nodes.attribution, nodes.line,
                         nodes.term, nodes.option_group, nodes.field_name, nodes.problematic)):
        return [_inline(node)]
    if isinstance(node, nodes.Text):
        return [node.astext()] if node.astext().strip() else []
    if isinstance(node, nodes.Element):
        return _blocks(node, depth)  # lists of fields and definitions, admonitions, containers, figures
    return []


def _blocks_of(children: list[nodes.Node], depth: int) -> list[str]:
    return [block for child in children for block in _block(child, depth)]


def _item(mark: str, blocks: list[str]) -> str:
    """A list item: its first line after the list mark, the rest indented under it."""
    lines = "\n\n".join(blocks).split("\n") or [""]
    pad = " " * len(mark)
    return mark + lines[0] + "".join("\n" + (pad + line if line else "") for line in lines[1:])


def _inline(node: nodes.Node) -> str:
    """The text of an inline run, without markup (images and system messages left out)."""
    if isinstance(node, _DROPPED_NODES):
        return ""
    if isinstance(node, nodes.Text):
        return node.astext()
    return "".join(_inline(child) for child in node.children)
