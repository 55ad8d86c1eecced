"""A run's results: the per-query table's schema, the comparison (means, CIs, paired tests,
verdicts), and the writers (CSV / Markdown / JSON, TREC files, the HTML report, the terminal
summary). The runner produces a per-query table and hands it here; nothing here runs retrieval."""
