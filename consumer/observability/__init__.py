"""Metrics, health endpoints, logs, tracing and partition progress."""
