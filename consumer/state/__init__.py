"""Durable state: the point codec, the stores, the changelog and partition membership."""
