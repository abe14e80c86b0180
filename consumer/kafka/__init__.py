"""Kafka adapters: the publisher, partitioning, security, topics and readers."""
