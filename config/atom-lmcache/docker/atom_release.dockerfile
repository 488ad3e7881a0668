ARG BASE_IMAGE=rocm/atom:base
# LMCache: a ROCm wheel published as a FROM-scratch image, pinned by digest
ARG LMCACHE_WHEEL_IMAGE="rocm/atom-dev:lmcache-v0.5.6.dev98-g05fc77a0-rocm-torch210@sha256:259e8f0a0c3ec4e94df6b990e36f76a33224b8623f3dcde609c972729b3ba0d5"
ARG LMCACHE_WHEEL_SHA256=ecd95a3f8e1191647566babdd2bd209a8c7a47a6380a8654b8dbf60451814da8
FROM ${LMCACHE_WHEEL_IMAGE} AS lmcache_wheel
FROM ${BASE_IMAGE}
ARG LMCACHE_WHEEL_SHA256
COPY --from=lmcache_wheel / /tmp/lmcache-wheel/
RUN echo "${LMCACHE_WHEEL_SHA256}  $(ls /tmp/lmcache-wheel/*.whl)" | sha256sum -c -
