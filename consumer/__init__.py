"""memdedup: deduplication of AI-agent memories, as a Kafka consumer."""
