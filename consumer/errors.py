"""The package's exceptions share one root, MemdedupError, and its two branches say
how a caller treats one:

- TransientError: may succeed if retried. The consumer retries the batch with
  backoff and never dead-letters it; a command reports the outage.
- PermanentError: a property of the input or the configuration; retrying cannot
  help. A record is dead-lettered at once, a command is refused, a service with
  bad settings does not start.

A few derive from the root alone, as neither branch says what their callers do:
PartitionsLost (the batch is abandoned to the next owner) and the failures of the
optional LLM calls (ChatFailed, MergeFailed), which are always handled where they
are raised by a fallback. Exception classes live beside the code that raises them
(ConfigError in consumer.settings, PairFileError in consumer.quality.pairs, ...);
tests/unit/test_errors.py checks that each derives from the root."""


class MemdedupError(Exception):
    """Every exception memdedup defines."""


class TransientError(MemdedupError):
    """May succeed if retried: infrastructure is down, slow or busy."""


class StoreUnavailable(TransientError):
    """The vector store cannot be reached or the shard is held elsewhere."""


class EmbedderUnavailable(TransientError):
    """The embedding model failed in a way that a retry may fix."""


class ChangelogUnavailable(TransientError):
    """The changelog topic cannot be read or written right now."""


class PublishFailed(TransientError):
    """The broker did not acknowledge a record."""


class PermanentError(MemdedupError):
    """Retrying cannot help: the failure is a property of the record at hand.
    The record is dead-lettered (alone, its batch-mates decided) at once."""


class PublishRejected(PermanentError):
    """The broker, or the producer's own checks, refused a record for what it is
    (too large, an invalid topic): every retry would be refused the same way."""


class PartitionsLost(MemdedupError):
    """The group no longer counts this consumer as a member of its current
    generation: its partitions may belong to another consumer already, so nothing
    of the batch in flight may be published. Neither retried nor dead-lettered:
    the batch is left to the partitions' next owner."""


class MembershipUnknown(TransientError):
    """The group coordinator could not say whether this consumer is still a member."""
