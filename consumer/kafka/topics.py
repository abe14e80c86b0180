"""Creating the service's topics (demo, tests, `memdedup topics`)."""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass

from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
from aiokafka.errors import TopicAlreadyExistsError, for_code

from consumer.kafka.security import aiokafka_kwargs
from consumer.settings import Settings

COMPACTED = {"cleanup.policy": "compact"}
# Kafka's defaults where a topic sets neither (log.retention.hours, log.roll.hours).
DEFAULT_RETENTION_MS = 7 * 24 * 3_600_000
DEFAULT_SEGMENT_MS = 7 * 24 * 3_600_000


@dataclass(frozen=True, slots=True)
class TopicRetention:
    """A topic's time-based retention, as its configuration states it."""

    retention_ms: int  # negative: kept for ever
    segment_ms: int

    @property
    def longest_kept_hours(self) -> float:
        """How long a record can stay: Kafka deletes a segment once its newest
        record has expired, and a segment is rolled after `segment_ms` at most."""
        if self.retention_ms < 0:
            return math.inf
        return (self.retention_ms + self.segment_ms) / 3_600_000


async def topic_retention(settings: Settings, topic: str) -> TopicRetention:
    """The topic's retention.ms and segment.ms (Kafka's defaults for those it does
    not set). Raises KafkaError when the broker does not answer or refuses."""
    admin = AIOKafkaAdminClient(
        bootstrap_servers=settings.kafka.bootstrap_servers,
        **aiokafka_kwargs(settings.security),
    )
    await admin.start()
    try:
        [response] = await admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])
    finally:
        await admin.close()
    values: dict[str, str] = {}
    for error_code, _, _, _, entries in response.resources:
        if error_code:
            raise for_code(error_code)(f"describe configs of {topic}")
        values.update({entry[0]: entry[1] for entry in entries if entry[1] is not None})
    return TopicRetention(
        retention_ms=int(values.get("retention.ms", DEFAULT_RETENTION_MS)),
        segment_ms=int(values.get("segment.ms", DEFAULT_SEGMENT_MS)),
    )


def topic_names(settings: Settings) -> list[str]:
    """Input, decision, dead-letter, reversal and command-result topics (not the
    changelog)."""
    topics = settings.topics
    return [
        topics.input,
        topics.accepted,
        topics.merged,
        topics.skipped,
        topics.dlq,
        topics.reversed,
        topics.command_results,
    ]


async def ensure_topics(settings: Settings) -> list[str]:
    """Create missing topics; returns the names it created."""
    admin = AIOKafkaAdminClient(
        bootstrap_servers=settings.kafka.bootstrap_servers,
        **aiokafka_kwargs(settings.security),
    )
    await admin.start()
    try:
        existing = set(await admin.list_topics())
        topics = settings.topics
        partitions = topics.partitions
        if topics.input in existing:
            # The changelog must mirror the input's partitions, whatever they are.
            described = await admin.describe_topics([topics.input])
            partitions = len(described[0]["partitions"]) or partitions
        wanted = [
            NewTopic(name, num_partitions=partitions, replication_factor=topics.replication_factor)
            for name in topic_names(settings)
            if name not in existing
        ]
        if topics.changelog and topics.changelog not in existing:
            wanted.append(
                NewTopic(
                    topics.changelog,
                    num_partitions=partitions,
                    replication_factor=topics.replication_factor,
                    topic_configs=COMPACTED,
                )
            )
        if wanted:
            with contextlib.suppress(TopicAlreadyExistsError):
                await admin.create_topics(wanted)
        return [topic.name for topic in wanted]
    finally:
        await admin.close()
