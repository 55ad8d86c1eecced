"""The one set of rules for every model endpoint the benchmark calls: the generator's and the judge's
chat completions (:mod:`rag.generation.llm`), an endpoint embedder (:mod:`rag.encoders`) and an
endpoint reranker (:mod:`rag.rerankers.endpoint`).

- :mod:`rag.endpoints.settings`: ``base_url`` (an http(s) URL with a host), ``api_key_env`` (the name
  of the variable holding the key, never the key), ``concurrency``, ``timeout_s``, ``max_retries``,
  ``backoff``;
- :mod:`rag.endpoints.keys`: the key read from that variable, refused before any work when a remote
  endpoint has none (:func:`check_endpoint_keys` walks a whole run config);
- :mod:`rag.endpoints.clients`: the ``openai`` and ``httpx`` clients (their own retries off);
- :mod:`rag.endpoints.retry`: which failures are retried, and the backoff (tenacity);
- :mod:`rag.endpoints.preflight`: one probe before the first request.

Every message from an endpoint passes through the run's :class:`rag.secrets.Redactor` before it is
logged, cached or written.
"""
