#!/usr/bin/env bash
# Creates memdedup's topics on a Kafka cluster (used by docker-compose).
set -euo pipefail
BOOTSTRAP=${BOOTSTRAP:-localhost:9092}
PARTITIONS=${PARTITIONS:-6}
REPLICATION=${REPLICATION:-1}
KAFKA_TOPICS=${KAFKA_TOPICS:-/opt/kafka/bin/kafka-topics.sh}
for topic in memory.extracted memory.accepted memory.merged memory.skipped memory.dlq \
  memory.reversed memdedup.command-results; do
  "$KAFKA_TOPICS" --bootstrap-server "$BOOTSTRAP" --create --if-not-exists \
    --topic "$topic" --partitions "$PARTITIONS" --replication-factor "$REPLICATION"
done
