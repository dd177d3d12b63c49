//go:build !amd64 || purego

package cpu

// useAVX2 is false off amd64 (and with the purego tag): the Go kernels run.
const useAVX2 = false

func dotRowsKernel(y, w []float32, stride int, x []float32) { dotRowsGo(y, w, stride, x) }

func accumRowsKernel(y, w []float32, stride int, p []float32) { accumRowsGo(y, w, stride, p) }

func softmaxKernel(s []float32, scale float32) { softmaxGo(s, scale) }

func siluMulKernel(y, g, u []float32) { siluMulGo(y, g, u) }
