// Package bytesize writes the byte sizes hsdb prints (plans, memory
// errors, `info memory`, capture rates, check's memory bounds) with one
// rule, so that one size reads the same everywhere: three significant
// digits ("2.5 MiB", "84.3 GB", "312 MiB"), in binary units (KiB = 1024 B,
// as nvidia-smi and CUDA report device memory) or decimal ones (GB = 1e9 B,
// as disks and model cards count). It imports only the standard library,
// so the engine, its CUDA driver and the front ends can all use it. (A
// library such as go-humanize rounds 84.3 GB to "84 GB": too coarse for a
// plan whose margin is a few GB.)
package bytesize
