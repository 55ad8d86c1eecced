"""Files a documentation tool writes beside the pages it builds, which are not pages a question is
about: left out of a folder of files unless ``dataset.generated_pages: keep``.

A folder is a tool's build when it holds the tool's marker file (:data:`TOOLS`); then the tool's
generated pages and folders directly under it are left out:

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
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Tool:
    """A documentation tool: the file that marks its build, and what it generates beside the pages."""

    name: str
    marker: str
    pages: re.Pattern[str]  # file names, matched whole
    folders: frozenset[str]


_HTML = r"\.(?:html|xhtml|htm)\Z"
TOOLS = (
    Tool("Sphinx", "searchindex.js", re.compile(r"(?:genindex(?:-[^/]+)?|search|[a-z]+-modindex)" + _HTML),
         frozenset({"_sources", "_static"})),
    Tool("Doxygen", "doxygen.css",
         re.compile(r"(?:(?:globals|functions|namespacemembers)(?:_[^/.]+)?|files|annotated|classes|hierarchy|inherits"
                    r"|namespaces|modules|pages|todo|deprecated|bug|test|graph_legend|dir_[0-9a-f]+|[^/]+-members"
                    r"|[^/]+_source)" + _HTML),
         frozenset({"search"})),
)


def generated_here(dirnames: list[str], filenames: list[str]) -> tuple[str | None, list[str], list[str]]:
    """The tool whose build this folder is (its ``os.walk`` entry: the first of :data:`TOOLS` whose
    marker it holds, or None), and the folders and files of it that the tool generated."""
    for tool in TOOLS:
        if tool.marker in filenames:
            return (tool.name, [name for name in dirnames if name in tool.folders],
                    [name for name in filenames if tool.pages.match(name)])
    return None, [], []
