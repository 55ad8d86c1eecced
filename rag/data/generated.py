"""Files a documentation tool writes beside the pages it builds, which are not pages a question is
about: left out of a folder of files unless ``dataset.generated_pages: keep``.

A folder is a tool's build when it holds one of the tool's marker files (:data:`TOOLS`; a name, a
name pattern with ``*``, or a path below the folder; the first tool in :data:`TOOLS` that matches);
then the tool's generated pages and folders directly under it are left out, and for some tools
(Javadoc, rustdoc) also those in every folder below it:

- **Sphinx** (marker ``searchindex.js``, written by every Sphinx HTML build): the general index
  (``genindex.html``, and when split ``genindex-A.html`` ... ``genindex-all.html``) and the domain
  indices (``py-modindex.html``): lists of every term and module, each a link, which match a
  question's words on every term and lead nowhere (Python 3.11's build holds 32 index and search
  pages, one "holding" the 27 others); ``search.html``, a search form; ``_sources/``, a copy of every
  page's source (``.rst.txt``, ``.md.txt``) read as plain text with its markup; ``_static/``, the
  theme's files.
- **Doxygen** (marker ``doxygen.css``, written by every Doxygen HTML build): the indices of members,
  files, classes and namespaces (``globals*``, ``functions*``, ``namespacemembers*``, ``files``,
  ``annotated``, ``classes``, ``hierarchy``, ``inherits``, ``namespaces``, ``modules``, ``pages``,
  ``dir_*``), each class's list of all its members (``*-members``), the lists gathered from the pages
  (``todo``, ``deprecated``, ``bug``, ``test``), ``graph_legend``, the source listing of every file
  (``*_source``: the code again, beside the documented page), and ``search/``.
- **Javadoc** (marker ``element-list``, or ``package-list`` before JDK 10: the list of packages every
  build writes): the indices (``index-all``, ``index-files/``, ``allclasses*``, ``allpackages-index``,
  ``overview-tree``, ``overview-frame``), the lists gathered from the pages (``constant-values``,
  ``deprecated-list``, ``serialized-form``, ``new-list`` ...), the help page about Javadoc itself
  (``help-doc``), ``search``, the source listings (``src-html/``: the code again, with line numbers),
  the bundled scripts' licenses (``legal/``) and ``resources/``, ``script-dir/``, ``jquery/``; and in
  every package folder below it, the package's class tree and use lists (``package-tree``,
  ``package-use``, ``package-frame``) and ``class-use/`` (a page per class, listing where it is used).
- **mdBook** (marker ``book.js``; its builds also hold a ``searchindex.js``, so mdBook is tried before
  Sphinx): ``print.html`` (the whole book on one page, every chapter again), ``toc.html`` and
  ``404.html``.
- **rustdoc** (marker ``crates*.js``, or ``search-index*.js`` in older builds; ``*`` is the
  ``--resource-suffix`` the standard library's build uses, ``crates1.63.0.js``): ``settings.html``,
  ``help.html``, the licenses of the fonts it bundles (``COPYRIGHT.txt``, ``LICENSE-MIT.txt``,
  ``FiraSans-LICENSE.txt`` ...), the source listings (``src/``), the trait implementor lists
  (``implementors/``, ``trait.impl/``, ``type.impl/``), ``static.files/`` and ``search.desc/``; and
  in every crate folder below it, ``all.html`` (a list of every item of the crate).
- **MkDocs** (marker ``search/search_index.json``, written by its search plugin, on by default):
  ``404.html`` (the site's "404 - Not found" page) and ``search.html`` (the search page of MkDocs'
  own themes).
- **gtk-doc** (marker ``*.devhelp2``, or ``*.devhelp`` in older builds: the book's index for the
  Devhelp browser, written by every build): the symbol indices (``api-index-full.html``, every
  function, macro and type with the page it is on; ``api-index-deprecated.html``,
  ``api-index-2-0.html`` ... for the symbols new in a version), and ``annotation-glossary.html``
  (the meaning of gtk-doc's own annotations, ``[out]``, ``[transfer full]``, the same in every
  library's build).

A tool's rules for the folders below its build (Javadoc's, rustdoc's) hold down to the next folder
that is a build of its own.

Inside a page that a tool marks as its own (``<meta name="generator" content="rustdoc">``),
:data:`PAGE_FURNITURE` names what the tool writes on every page alike, which the HTML converter drops
(:mod:`rag.data.convert`): rustdoc's "Auto Trait Implementations" (``Send``, ``Sync``, ``Unpin``
...) and "Blanket Implementations" (``impl<T> From<T> for T``, ``Borrow``, ``ToOwned`` ...) lists
with their headings, 2,815 of the 5,372 chunks of Debian's ``cargo-doc``; and its controls: the
"source" links and "since" versions beside every item (``rightside``, ``srclink``), the page's
"source · [−]" (``out-of-band``) and "Expand description" (``hideme``); Javadoc's (JDK 16 and later)
filter buttons over its summary tables ("All Methods", "Static Methods", ... run together as one
line: ``table-tabs``); gtk-doc's navigation bar ("Top | Description", and the letters of an index:
``navigation``) and its "Generated by GTK-Doc" line (``footer``); Texinfo's (``makeinfo``) node
navigation above every node ("Next: ..., Previous: ..., Up: ... [Index]": ``header``), the node's
menu of its child nodes (``section-toc``), and the printed indices (tables of class ``index-cp``,
``index-fn`` ...: an entry and the node it is in, each a link) with their "Jump to: A B C" letter
tables; the DocBook XSL stylesheets' (PostgreSQL's, Valgrind's, libxml2's and Debian's manuals)
navigation above and below every page ("Prev | Up | Home | Next" and the neighbours' titles:
``navheader``, ``navfooter``: the divisions around the bars, whose tables, of summary "Navigation
header" or "Navigation footer", every page loses), the lists of the book's tables, figures and
examples (``list-of-tables`` ...: each title a link, a table of contents) and the book's index (``index``,
``setindex``: every indexed term with the sections it is in); and its admonitions drawn with an icon
(``admon.graphics``: a table of summary "Note", "Tip", "Important", "Caution" or "Warning" holding
the icon, the label and the text, which markdownify would write as one table row), its callout
lists (summary "Callout list": a row per numbered remark on a program listing) and its block quotes
with an attribution (summary "Block quote") are unwrapped into their cells' own paragraphs (counted
as ``layout_tables``). In PostgreSQL 15's manual (1,169 pages) the bars were in 2,331 of its 11,503
chunks and the index was 161 more.

A page of one of these tools that holds nothing but such furniture, tables of contents and headings
(Texinfo's and DocBook's index pages; a part's or a chapter's page that lists its sections) is a page
the tool generated: it is listed in ``Dataset.generated`` under the tool's name and left out
like the generated files above, or indexed whole, furniture and all, with ``generated_pages: keep``.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Tool:
    """A documentation tool: the files that mark its build, what it generates beside the pages in the
    build's folder, and what it generates in every folder below it."""

    name: str
    markers: tuple[str, ...]  # file names (``*`` as in fnmatch), or paths below the folder
    pages: re.Pattern[str]  # file names, matched whole
    folders: frozenset[str]
    nested_pages: re.Pattern[str] | None = None
    nested_folders: frozenset[str] = frozenset()


_HTML = r"\.(?:html|xhtml|htm)\Z"
TOOLS = (
    Tool("mdBook", ("book.js",), re.compile(r"(?:print|toc|404)" + _HTML), frozenset({"FontAwesome", "fonts", "css"})),
    Tool("Sphinx", ("searchindex.js",), re.compile(r"(?:genindex(?:-[^/]+)?|search|[a-z]+-modindex)" + _HTML),
         frozenset({"_sources", "_static"})),
    Tool("Doxygen", ("doxygen.css",),
         re.compile(r"(?:(?:globals|functions|namespacemembers)(?:_[^/.]+)?|files|annotated|classes|hierarchy|inherits"
                    r"|namespaces|modules|pages|todo|deprecated|bug|test|graph_legend|dir_[0-9a-f]+|[^/]+-members"
                    r"|[^/]+_source)" + _HTML),
         frozenset({"search"})),
    Tool("Javadoc", ("element-list", "package-list"),
         re.compile(r"(?:index-all|allclasses(?:-index|-frame|-noframe)?|allpackages-index|overview-tree|overview-frame"
                    r"|constant-values|deprecated-list|serialized-form|new-list|preview-list|restricted-list"
                    r"|external-specs|system-properties|help-doc|search|package-tree|package-use|package-frame)" + _HTML),
         frozenset({"index-files", "src-html", "legal", "resources", "script-dir", "jquery", "class-use"}),
         re.compile(r"(?:package-tree|package-use|package-frame)" + _HTML), frozenset({"class-use"})),
    Tool("rustdoc", ("crates*.js", "search-index*.js"),
         re.compile(r"(?:settings|help|all)" + _HTML + r"|(?:COPYRIGHT|LICENSE-MIT|LICENSE-APACHE|[A-Za-z0-9]+-LICENSE)"
                    r"\.(?:txt|md)\Z"),
         frozenset({"src", "implementors", "trait.impl", "type.impl", "static.files", "search.desc"}),
         re.compile(r"all" + _HTML)),
    Tool("MkDocs", ("search/search_index.json",), re.compile(r"(?:404|search)" + _HTML), frozenset()),
    Tool("gtk-doc", ("*.devhelp2", "*.devhelp"), re.compile(r"(?:[a-z0-9-]*api-index[^/]*|annotation-glossary)" + _HTML),
         frozenset()),
)


@dataclass(frozen=True)
class Furniture:
    """What a tool (``tool``: its name in ``Dataset.generated``) writes on every page alike: elements
    by ``id``, by ``class``, by a pattern for a family of classes (matched whole), and the tables that
    hold an element of one of ``tables_of`` classes; and, by an attribute's exact value, the tables
    it writes only to lay out a block (``layout_tables``), whose rows and cells the converter unwraps
    into blocks."""

    tool: str
    ids: tuple[str, ...] = ()
    classes: tuple[str, ...] = ()
    class_pattern: str | None = None
    tables_of: tuple[str, ...] = ()
    layout_tables: tuple[tuple[str, str], ...] = ()


#: A tool's page furniture, by the name its pages give in ``<meta name="generator">`` (its first word,
#: lower-cased, before a ``/`` or a space: Javadoc writes ``javadoc/ClassWriterImpl``, gtk-doc
#: ``GTK-Doc V1.33.1 (XML mode)``, Texinfo ``makeinfo`` under ``name="Generator"``, the DocBook XSL
#: stylesheets ``DocBook XSL Stylesheets V1.79.2``).
PAGE_FURNITURE = {
    "rustdoc": Furniture("rustdoc", ids=("synthetic-implementations", "synthetic-implementations-list",
                                         "blanket-implementations", "blanket-implementations-list"),
                         classes=("srclink", "rightside", "out-of-band", "hideme")),
    "javadoc": Furniture("Javadoc", classes=("table-tabs",)),
    "gtk-doc": Furniture("gtk-doc", classes=("navigation", "footer")),
    "makeinfo": Furniture("Texinfo", classes=("header", "section-toc"), class_pattern=r"index-[a-z]+",
                          tables_of=("summary-letter",)),
    "docbook": Furniture("DocBook XSL", classes=("navheader", "navfooter", "index", "setindex"),
                         class_pattern=r"list-of-[a-z]+",
                         layout_tables=tuple(("summary", label) for label in ("Note", "Tip", "Important", "Caution",
                                                                              "Warning", "Callout list", "Block quote"))),
}


def generated_here(here: Path, dirnames: list[str], filenames: list[str], above: Tool | None = None
                   ) -> tuple[Tool | None, list[str], list[str]]:
    """The tool whose build the folder ``here`` is or lies in (its ``os.walk`` entry: the first of
    :data:`TOOLS` with a marker here (a file name, or a path below ``here``), else ``above``, the tool
    of the folder above, for a tool with rules for the folders below its build), and the folders and
    files here that the tool generated."""
    def marks(marker: str) -> bool:
        return (here / marker).is_file() if "/" in marker else bool(fnmatch.filter(filenames, marker))

    own = next((tool for tool in TOOLS if any(marks(marker) for marker in tool.markers)), None)
    if own is not None:
        return (own, [name for name in dirnames if name in own.folders],
                [name for name in filenames if own.pages.match(name)])
    if above is not None and above.nested_pages is not None:
        return (above, [name for name in dirnames if name in above.nested_folders],
                [name for name in filenames if above.nested_pages.match(name)])
    return None, [], []
