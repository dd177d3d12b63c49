// copy.cu: strided 2-D copies of raw elements, for column slices and
// concatenations (SliceCols, ConcatCols, the all-gather's reassembly, a
// column slice read back to the host) and, with in_ld = 0, for broadcasting
// one row to every row (a linear layer's bias before the GEMM adds x·Wᵀ).
//
//   out[r*out_ld + c] = in[r*in_ld + c]   for r < rows, c < cols
//
// Elements are moved as unsigned integers of 1, 2, 4 or 8 bytes, so one
// instantiation serves every dtype of that size and the bits arrive
// unchanged (no rounding, NaN payloads kept); the host picks the widest unit
// that divides the addresses, the row length and both strides in bytes.
// Rows run over gridDim.y (grid-stride), columns over gridDim.x*blockDim.x.

template <typename U>
__device__ void copy2d(U* out, const U* in, long long rows, long long cols, long long out_ld, long long in_ld) {
    for (long long r = blockIdx.y; r < rows; r += gridDim.y) {
        for (long long c = (long long)blockIdx.x * blockDim.x + threadIdx.x; c < cols;
             c += (long long)gridDim.x * blockDim.x)
            out[r * out_ld + c] = in[r * in_ld + c];
    }
}

extern "C" __global__ void copy2d_u8(unsigned char* out, const unsigned char* in, long long rows, long long cols,
                                     long long out_ld, long long in_ld) {
    copy2d<unsigned char>(out, in, rows, cols, out_ld, in_ld);
}
extern "C" __global__ void copy2d_u16(unsigned short* out, const unsigned short* in, long long rows, long long cols,
                                      long long out_ld, long long in_ld) {
    copy2d<unsigned short>(out, in, rows, cols, out_ld, in_ld);
}
extern "C" __global__ void copy2d_u32(unsigned int* out, const unsigned int* in, long long rows, long long cols,
                                      long long out_ld, long long in_ld) {
    copy2d<unsigned int>(out, in, rows, cols, out_ld, in_ld);
}
extern "C" __global__ void copy2d_u64(unsigned long long* out, const unsigned long long* in, long long rows,
                                      long long cols, long long out_ld, long long in_ld) {
    copy2d<unsigned long long>(out, in, rows, cols, out_ld, in_ld);
}
