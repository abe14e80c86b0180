"""The running service: the app factory, the Kafka handler, the consumer loop with its
retries, partition handover."""
