"""Creating the service's topics (demo, tests, `memdedup topics`)."""

from __future__ import annotations

import contextlib

from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import TopicAlreadyExistsError

from consumer.kafka_security import aiokafka_kwargs
from consumer.settings import Settings

COMPACTED = {"cleanup.policy": "compact"}


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
