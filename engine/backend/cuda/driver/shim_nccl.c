//go:build cuda

// shim_nccl.c: NCCL entry points resolved with dlopen/dlsym; see
// shim_nccl.h.
#include <dlfcn.h>
#include "shim_nccl.h"

#define HSDB_PTR(name, sym, params, args) static ncclResult_t (*p_##name) params;
HSDB_NCCL_FUNCS(HSDB_PTR)
static const char* (*p_error_string)(ncclResult_t);

#define HSDB_WRAP(name, sym, params, args) ncclResult_t hsdb_##name params { return p_##name args; }
HSDB_NCCL_FUNCS(HSDB_WRAP)

const char* hsdb_nccl_open(const char* lib) {
    void* h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!h) return dlerror();
#define HSDB_SYM(name, sym, params, args)                 \
    p_##name = (ncclResult_t(*) params)dlsym(h, #sym); \
    if (!p_##name) return #sym;
    HSDB_NCCL_FUNCS(HSDB_SYM)
    p_error_string = (const char* (*)(ncclResult_t))dlsym(h, "ncclGetErrorString");
    return NULL;
}

const char* hsdb_nccl_error_string(ncclResult_t r) {
    if (p_error_string == NULL) return "";
    const char* s = p_error_string(r);
    return s ? s : "";
}

ncclResult_t hsdb_nccl_all_reduce(unsigned long long send, unsigned long long recv, size_t count, ncclDataType_t dt,
                                  ncclComm_t c, cudaStream_t s) {
    return p_ncclAllReduce((const void*)send, (void*)recv, count, dt, 0 /* ncclSum */, c, s);
}

ncclResult_t hsdb_nccl_all_gather(unsigned long long send, unsigned long long recv, size_t count, ncclDataType_t dt,
                                  ncclComm_t c, cudaStream_t s) {
    return p_ncclAllGather((const void*)send, (void*)recv, count, dt, c, s);
}
