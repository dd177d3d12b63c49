// embedding.cu: vocab-parallel embedding lookup (vLLM
// VocabParallelEmbedding): this rank holds rows [start, end) of the table;
// a token whose id falls outside that range gets a zero row, and the
// all-reduce over ranks then yields the full embedding.
#include "common.cuh"

// embedding_DT: out [tokens, hidden], ids [tokens] int32, table
// [end-start, hidden]. One block per token (gridDim.x = tokens).
template <typename T>
__device__ void embedding(st<T>* out, const int* ids, const st<T>* table, int hidden, int start, int end) {
    long long t = blockIdx.x;
    int id = ids[t];
    bool mine = id >= start && id < end;
    const st<T>* row = table + (long long)(id - start) * hidden;
    for (int c = threadIdx.x; c < hidden; c += blockDim.x) {
        st<T> v = 0;
        if (mine) v = row[c];
        out[t * hidden + c] = v;
    }
}

#define INST(name, T)                                                                       \
    extern "C" __global__ void embedding_##name(st<T>* out, const int* ids, const st<T>* table, \
                                                int hidden, int start, int end) {          \
        embedding<T>(out, ids, table, hidden, start, end);                                 \
    }
HSDB_DTYPES(INST)
