# memdedup consumer image: model baked in, no network needed at run time.
FROM python:3.11-slim AS build
WORKDIR /src
RUN python -m venv /opt/memdedup \
 && /opt/memdedup/bin/pip install --no-cache-dir --upgrade pip \
 && /opt/memdedup/bin/pip install --no-cache-dir torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu
COPY pyproject.toml README.md ./
COPY requirements ./requirements
# The spaCy English pipeline, checked against its pinned hash.
RUN /opt/memdedup/bin/pip install --no-cache-dir --no-deps --require-hashes -r requirements/nlp-model.txt
COPY consumer ./consumer
COPY schemas ./schemas
# The image runs the wheel, as a user installs it (not the source tree).
RUN /opt/memdedup/bin/pip wheel --no-cache-dir --no-deps -w /dist . \
 && /opt/memdedup/bin/pip install --no-cache-dir /dist/memdedup-*.whl
# Export the ONNX model once at build time: containers start without torch work
# and can run with a read-only root filesystem.
RUN /opt/memdedup/bin/python -c "from pathlib import Path; from consumer.embedding.onnx_export import ensure_onnx_model; ensure_onnx_model(Path('/opt/memdedup/models'))"

FROM python:3.11-slim
COPY --from=build /opt/memdedup /opt/memdedup
RUN useradd --system --uid 10001 --home /var/lib/memdedup --create-home memdedup
USER memdedup
WORKDIR /var/lib/memdedup
ENV PATH=/opt/memdedup/bin:$PATH \
    HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1 \
    MEMDEDUP_LOG__FORMAT=json \
    MEMDEDUP_QDRANT__PATH=/var/lib/memdedup/data \
    MEMDEDUP_EMBEDDING__ONNX_CACHE_DIR=/opt/memdedup/models \
    MEMDEDUP_HTTP__PORT=9464
# /metrics, /healthz, /readyz
EXPOSE 9464
HEALTHCHECK --interval=10s --timeout=5s --start-period=60s --retries=3 \
  CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:9464/healthz', timeout=3)"]
ENTRYPOINT ["memdedup"]
CMD ["run"]
