"""Query transforms: RM3 pseudo-relevance feedback (BM25), HyDE (dense) and multi-query (any of the
two), configured as ``query:`` in a retriever's params (:mod:`rag.retrievers.query_transforms.base`).

The settings models live in :mod:`rag.retrievers.query_transforms.config` (imported by the retrievers' params);
the transforms register themselves when :mod:`rag.retrievers` imports :mod:`.rm3`, :mod:`.hyde` and
:mod:`.multi_query`.
"""
