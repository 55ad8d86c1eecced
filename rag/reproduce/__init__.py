"""The reproduction matrix (Pyserini/Anserini's "2CR" style): every published number, with the exact
command that produces it and the tolerance it must be reproduced within.

- :mod:`rag.reproduce.matrix`: the typed model of one condition file (``reproduce/<name>.yaml``) and
  its loading (a bad file is one line naming the file and the key, exit 2);
- :mod:`rag.reproduce.measure`: runs a condition (its ``rag-bench run`` command, in process, or its
  metric cases) and returns the measured value of every cell;
- :mod:`rag.reproduce.check`: compares measured with expected, cell by cell;
- :mod:`rag.reproduce.runner`: runs the chosen conditions and keeps each one's last result;
- :mod:`rag.reproduce.writers`: the terminal matrix, ``result.json`` and ``index.html``;
- :mod:`rag.reproduce.readme`: the README blocks printed from the last run;
- :mod:`rag.reproduce.update`: ``--update-expected`` (measured values written into the YAML text).

The command line is :mod:`rag.cli.reproduce`; docs/reproduce.md has the matrix and its commands.
"""
