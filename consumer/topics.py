"""Creating the service's topics (demo, tests, `memdedup topics`)."""

from __future__ import annotations

import contextlib

from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import TopicAlreadyExistsError

from consumer.settings import Settings


def topic_names(settings: Settings) -> list[str]:
    topics = settings.topics
    return [topics.input, topics.accepted, topics.merged, topics.skipped, topics.dlq]


async def ensure_topics(settings: Settings) -> list[str]:
    """Create missing topics; returns the names it created."""
    admin = AIOKafkaAdminClient(bootstrap_servers=settings.kafka.bootstrap_servers)
    await admin.start()
    try:
        existing = set(await admin.list_topics())
        wanted = [
            NewTopic(
                name,
                num_partitions=settings.topics.partitions,
                replication_factor=settings.topics.replication_factor,
            )
            for name in topic_names(settings)
            if name not in existing
        ]
        if wanted:
            with contextlib.suppress(TopicAlreadyExistsError):
                await admin.create_topics(wanted)
        return [topic.name for topic in wanted]
    finally:
        await admin.close()
