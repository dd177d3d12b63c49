// copy.cu: strided 2-D copies of raw elements, for column slices and
// concatenations (SliceCols, ConcatCols, the all-gather's reassembly, a
// column slice read back to the host) and, with in_ld = 0, for broadcasting
// one row to every row (a linear layer's bias before the GEMM adds x·Wᵀ).
//
//   out[r*out_ld + c] = in[r*in_ld + c]   for r < rows, c < cols
//
// Elements are moved as unsigned integers of 1, 2, 4, 8 or 16 bytes, so one
// instantiation serves every dtype of that size and the bits arrive
// unchanged (no rounding, NaN payloads kept); the host picks the widest unit
// that divides the addresses, the row length and both strides in bytes.
// The rows×cols units are one flat grid-stride range, so narrow rows (a
// 128-element head slice) keep every thread busy.

template <typename U>
__device__ void copy2d(U* out, const U* in, long long rows, long long cols, long long out_ld, long long in_ld) {
    const long long n = rows * cols;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
        long long r = i / cols, c = i - r * cols;
        out[r * out_ld + c] = in[r * in_ld + c];
    }
}

#define COPY2D(name, U)                                                                                   \
    extern "C" __global__ void copy2d_##name(U* out, const U* in, long long rows, long long cols,         \
                                             long long out_ld, long long in_ld) {                        \
        copy2d<U>(out, in, rows, cols, out_ld, in_ld);                                                    \
    }
COPY2D(u8, unsigned char)
COPY2D(u16, unsigned short)
COPY2D(u32, unsigned int)
COPY2D(u64, unsigned long long)
COPY2D(u128, uint4)
