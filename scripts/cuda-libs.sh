# cuda-libs.sh: sourced by gpu-test.sh and bench-gpu.sh. hsdb opens cuBLAS
# and NCCL with dlopen (engine/backend/cuda/driver: blas.go, nccl.go), looking on
# the loader path and in /usr/local/cuda/lib64. A machine whose CUDA
# libraries come only with PyTorch's pip wheels (site-packages/nvidia/...)
# has them elsewhere: this sets HSDB_CUBLAS and HSDB_NCCL to those copies
# when the loader would not find any, and says what it chose.
hsdb_find_pip_lib() { # glob under every site-packages/nvidia
	python3 - "$1" 2>/dev/null <<'PY'
import glob, os, site, sys
roots = list(site.getsitepackages()) + [site.getusersitepackages()]
for r in roots:
    hits = sorted(glob.glob(os.path.join(r, "nvidia", "**", sys.argv[1]), recursive=True), reverse=True)
    if hits:
        print(hits[0])
        break
PY
}
if [[ -z ${HSDB_CUBLAS:-} ]] && ! ldconfig -p 2>/dev/null | grep -q 'libcublas\.so\.1[123] ' && ! ls /usr/local/cuda/lib64/libcublas.so.1[123] >/dev/null 2>&1; then
	lib=$(hsdb_find_pip_lib 'libcublas.so.1[123]')
	if [[ -n $lib ]]; then
		export HSDB_CUBLAS=$lib
		echo "cuda-libs: HSDB_CUBLAS=$lib"
	else
		echo "cuda-libs: no cuBLAS found on the loader path, in /usr/local/cuda or in pip's nvidia packages" >&2
	fi
fi
if [[ -z ${HSDB_NCCL:-} ]] && ! ldconfig -p 2>/dev/null | grep -q 'libnccl\.so\.2 ' && ! ls /usr/local/cuda/lib64/libnccl.so.2 /usr/lib/x86_64-linux-gnu/libnccl.so.2 >/dev/null 2>&1; then
	lib=$(hsdb_find_pip_lib 'libnccl.so.2')
	if [[ -n $lib ]]; then
		export HSDB_NCCL=$lib
		echo "cuda-libs: HSDB_NCCL=$lib"
	fi
fi
export NCCL_NVLS_ENABLE=0
