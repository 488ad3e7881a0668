ARG BASE_IMAGE=rocm/atom:base
# LMCache: a ROCm wheel published as a FROM-scratch image, pinned by digest
ARG LMCACHE_WHEEL_IMAGE="rocm/atom-dev:lmcache-v0.5.6.dev103-g3d3aa833-rocm-torch210@sha256:97e67a5645969953f1a4cfe2ea75649864ff99789189cdd3f6db03e59f8a8ebf"
ARG LMCACHE_WHEEL_SHA256=83fb21847aaa2e77ce1496b1ebe9a0b40a58a05e2336c6a7a48ecf08160054c4
FROM ${LMCACHE_WHEEL_IMAGE} AS lmcache_wheel
FROM ${BASE_IMAGE}
ARG LMCACHE_WHEEL_SHA256
COPY --from=lmcache_wheel / /tmp/lmcache-wheel/
RUN echo "${LMCACHE_WHEEL_SHA256}  $(ls /tmp/lmcache-wheel/*.whl)" | sha256sum -c -
