"""Vector store adapters: the embedded Qdrant engine and a Qdrant server."""
