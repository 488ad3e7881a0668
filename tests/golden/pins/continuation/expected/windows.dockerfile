# escape=`
FROM rocm/atom:base
ARG A=1 LMCACHE_WHEEL_IMAGE="rocm/atom-dev:lmcache-v0.5.6.dev103-g3d3aa833-rocm-torch210@sha256:97e67a5645969953f1a4cfe2ea75649864ff99789189cdd3f6db03e59f8a8ebf" `
    LMCACHE_WHEEL_SHA256=83fb21847aaa2e77ce1496b1ebe9a0b40a58a05e2336c6a7a48ecf08160054c4
RUN echo C:\path\kept
