# memdedup consumer image: model baked in, no network needed at run time.
FROM python:3.11-slim AS build
WORKDIR /src
RUN python -m venv /opt/memdedup \
 && /opt/memdedup/bin/pip install --no-cache-dir --upgrade pip \
 && /opt/memdedup/bin/pip install --no-cache-dir torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu
COPY pyproject.toml README.md ./
COPY consumer ./consumer
COPY schemas ./schemas
RUN /opt/memdedup/bin/pip install --no-cache-dir .

FROM python:3.11-slim
COPY --from=build /opt/memdedup /opt/memdedup
RUN useradd --system --uid 10001 --home /var/lib/memdedup --create-home memdedup
USER memdedup
WORKDIR /var/lib/memdedup
ENV PATH=/opt/memdedup/bin:$PATH \
    HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1 \
    MEMDEDUP_LOG__FORMAT=json \
    MEMDEDUP_QDRANT__PATH=/var/lib/memdedup/data
ENTRYPOINT ["memdedup"]
CMD ["run"]
