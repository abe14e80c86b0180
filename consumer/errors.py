"""Transient failures are retried with backoff and never dead-lettered; permanent
ones are a property of the input and go to the DLQ."""


class TransientError(Exception):
    """May succeed if retried: infrastructure is down, slow or busy."""


class StoreUnavailable(TransientError):
    """The vector store cannot be reached or the shard is held elsewhere."""


class EmbedderUnavailable(TransientError):
    """The embedding model failed in a way that a retry may fix."""


class ChangelogUnavailable(TransientError):
    """The changelog topic cannot be read or written right now."""


class PublishFailed(TransientError):
    """The broker did not acknowledge a record."""


class PermanentError(Exception):
    """Retrying cannot help: the failure is a property of the record at hand.
    The record is dead-lettered (alone, its batch-mates decided) at once."""


class PublishRejected(PermanentError):
    """The broker, or the producer's own checks, refused a record for what it is
    (too large, an invalid topic): every retry would be refused the same way."""


class PartitionsLost(Exception):
    """The group no longer counts this consumer as a member of its current
    generation: its partitions may belong to another consumer already, so nothing
    of the batch in flight may be published. Neither retried nor dead-lettered:
    the batch is left to the partitions' next owner."""


class MembershipUnknown(TransientError):
    """The group coordinator could not say whether this consumer is still a member."""
