"""Files a documentation tool writes beside the pages it builds, which are not pages a question is
about: left out of a folder of files unless ``dataset.generated_pages: keep``.

A **Sphinx HTML build** is a folder holding ``searchindex.js`` (:data:`SPHINX_MARKER`, written by
every Sphinx HTML build, and by no other tool we know of). Under it Sphinx writes, besides the pages:

- the general index (``genindex.html``, and when split ``genindex-A.html`` ... ``genindex-all.html``)
  and the domain indices (``py-modindex.html``): lists of every term and module, each a link.
  Indexed, they match a question's words on every term and lead nowhere (Python 3.11's build holds 29
  of them, one "holding" the 27 others);
- ``search.html``, a search form;
- ``_sources/``, a copy of every page's source (``.rst.txt``, ``.md.txt``), read as plain text with its
  markup; the near-duplicate rule pairs most with their page, not the stubs too short to compare;
- ``_static/``, the theme's files.

These are the :data:`SPHINX_PAGES` and :data:`SPHINX_FOLDERS` directly under the build's folder.
"""

from __future__ import annotations

import re

SPHINX_MARKER = "searchindex.js"
SPHINX_PAGES = re.compile(r"(?:genindex(?:-[^/]+)?|search|[a-z]+-modindex)\.html\Z")
SPHINX_FOLDERS = frozenset({"_sources", "_static"})


def generated_here(dirnames: list[str], filenames: list[str]) -> tuple[list[str], list[str]]:
    """The folders and files of one folder (its ``os.walk`` entry) that a documentation tool generated:
    those of :data:`SPHINX_FOLDERS` and :data:`SPHINX_PAGES` when it is a Sphinx build, else none."""
    if SPHINX_MARKER not in filenames:
        return [], []
    return ([name for name in dirnames if name in SPHINX_FOLDERS],
            [name for name in filenames if SPHINX_PAGES.match(name)])
