"""``python -m rag.testing --port 0 --latency 0.2``: run the stand-in OpenAI-compatible server."""

from rag.testing.stand_in import main

main()
