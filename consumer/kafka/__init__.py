"""Kafka wiring: the app factory, publisher, partitioning, security, topics and readers."""
