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
    st<T>* o = out + t * hidden;
    const int V = 16 / (int)sizeof(st<T>);  // 16-byte copies when the rows allow them
    if (hidden % V == 0 && (((unsigned long long)o | (unsigned long long)row) & 15) == 0) {
        const uint4* r4 = (const uint4*)row;
        uint4* o4 = (uint4*)o;
        for (int c = threadIdx.x; c < hidden / V; c += blockDim.x) {
            uint4 v = make_uint4(0, 0, 0, 0);
            if (mine) v = r4[c];
            o4[c] = v;
        }
        return;
    }
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
