"""Judging a run's pool: your questions, graded where they decide (docs/judging.md).

* :mod:`rag.judging.pool`: what a run leaves for judging (``pool.json``: every method's top-k per
  question of the sets to judge, and those chunks' text);
* :mod:`rag.judging.store`: the grade file ``judgments.jsonl`` (one judgment a line, appended and
  flushed the moment it is made) and its checks;
* :mod:`rag.judging.combine`: several judges -> one grade per (question, chunk), and qrels;
* :mod:`rag.judging.session`: the judging state: the next chunk to grade (MTC or depth order,
  :mod:`evaluation.mtc`) and whether the recommendation is decided;
* :mod:`rag.judging.exchange`: TREC qrels and Quepid CSV, out and in;
* :mod:`rag.judging.server` and ``templates/judge.html.j2``: the judging page on 127.0.0.1;
* :mod:`rag.judging.llm`: UMBRELA's prompt as a judge of its own.
"""
