"""Pure deduplication logic: no Kafka, no FastStream."""
