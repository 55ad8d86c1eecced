"""Questions: the bundled Wikipedia generators and question sets made from any configured corpus.

* :mod:`rag.data.questions.wiki` -- the generators of the bundled Wikipedia sets (scripts/build_wiki_data.py);
* :mod:`rag.runner.questions` -- ``make_questions(config, n, generator, seed)``: a cached question
  file for a configured corpus, from the LLM (:mod:`~rag.data.questions.llm`, replies read by
  :mod:`~rag.data.questions.parse`) or the templates (:mod:`~rag.data.questions.templates`), kept by
  the filters (:mod:`~rag.data.questions.filters`);
* :mod:`rag.data.questions.review` -- the review CSV and page, and applying a reviewed CSV;
* :mod:`rag.data.questions.provenance` -- the sidecar that records how a file was made.

This package imports none of them, so the data loaders can read provenance without loading the rest.
"""
