"""The running service: the app factory, the consumer loop with its retries, partition handover."""
