"""Text structure every layer reads: sentence splitting (:mod:`rag.text.sentences`) and a document's
sections (:mod:`rag.text.sections`). Leaf modules with no project imports, so chunking, generation
and the data loaders use them without importing each other."""
