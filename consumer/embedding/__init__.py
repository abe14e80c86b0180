"""Embedders: the packaged model through ONNX Runtime or sentence-transformers."""
