"""Durable state: the point codec, the stores (embedded, server, in-memory), the durable
write with its changelog, and partition membership."""
