# The wheelpin service: `docker build -t wheelpin .` at the project root, then see
# deploy/README.md. Its steps are the README's own: build the bot's wheel, install it.
# The base is pinned by digest; refresh it with
#   skopeo inspect --format '{{.Digest}}' docker://docker.io/library/python:3.11-slim-bookworm
ARG PYTHON_IMAGE=docker.io/library/python:3.11-slim-bookworm@sha256:2e32f7d302adc1c37428355c1e646897c0c53f4fd60b6a551245fb90ee129f91

FROM ${PYTHON_IMAGE} AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY bot ./bot
RUN pip wheel --no-cache-dir --no-deps --wheel-dir /dist .

FROM ${PYTHON_IMAGE}
# git: upstreams are followed with `git ls-remote` and shallow fetches
RUN apt-get update \
    && apt-get install -y --no-install-recommends git ca-certificates \
    && rm -rf /var/lib/apt/lists/*
# The dependencies from the lock (deploy/lock.py writes it: each pinned, with its wheel's sha256),
# the postgres extra's among them: one image runs one replica (SQLite) or several (WHEELPIN_DATABASE_URL).
COPY deploy/requirements.lock /tmp/requirements.lock
RUN pip install --no-cache-dir --require-hashes --only-binary=:all: -r /tmp/requirements.lock \
    && rm /tmp/requirements.lock
COPY --from=build /dist/ /tmp/dist/
RUN pip install --no-cache-dir --no-deps /tmp/dist/wheelpin-*.whl && rm -rf /tmp/dist
# `docker build --build-arg VERSION=… --build-arg REVISION=$(git rev-parse HEAD)` (deploy/README.md)
ARG VERSION=0.1.0
ARG REVISION=unknown
LABEL org.opencontainers.image.title="wheelpin" \
      org.opencontainers.image.description="Keeps the ROCm wheels inside container images current" \
      org.opencontainers.image.source="https://github.com/wheelpin/wheelpin" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}"
RUN useradd --uid 10001 --user-group --create-home --home-dir /home/wheelpin wheelpin \
    && mkdir -p /var/cache/wheelpin && chown 10001:10001 /var/cache/wheelpin
USER 10001:10001
ENV WHEELPIN_CACHE_DIR=/var/cache/wheelpin \
    WHEELPIN_LOG_FORMAT=json \
    WHEELPIN_LOG_LEVEL=info \
    PYTHONUNBUFFERED=1
VOLUME ["/var/cache/wheelpin"]
EXPOSE 8080
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
    CMD ["python", "-c", "import sys, urllib.request; sys.exit(urllib.request.urlopen('http://127.0.0.1:8080/healthz', timeout=4).status != 200)"]
ENTRYPOINT ["wheelpin", "serve"]
CMD ["--host", "0.0.0.0", "--port", "8080"]
