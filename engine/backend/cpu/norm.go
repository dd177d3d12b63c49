package cpu

import (
	"fmt"
	"math"

	"hsdb/engine/backend"
)

// RMSNorm computes y = x / sqrt(mean(x²) + eps) · w over each row of x
// [rows, n], w [n] (HF LlamaRMSNorm: the mean of squares in float32, here
// accumulated in float64 and rounded, which is at least as accurate).
func (d *Device) RMSNorm(x, w backend.Tensor, eps float32) backend.Tensor {
	xt := host(x)
	n := xt.Cols()
	wv := f32View(host(w))
	if len(wv) != n {
		panic(&backend.DeviceError{Device: d.name, Op: "rmsnorm", Err: fmt.Errorf("weight of %d elements for rows of %d", len(wv), n)})
	}
	xv := f32(x)
	res, y := d.newOutput(false, xt.Shape...)
	for r := 0; r < xt.Rows(); r++ {
		rmsRow(y[r*n:(r+1)*n], xv[r*n:(r+1)*n], wv, eps)
	}
	return res
}

func rmsRow(y, x, w []float32, eps float32) {
	var ss float64
	for _, v := range x {
		ss += float64(v) * float64(v)
	}
	inv := float32(1 / math.Sqrt(float64(float32(ss/float64(len(x))))+float64(eps)))
	for i, v := range x {
		y[i] = w[i] * (v * inv)
	}
}

// AddRMSNorm returns (RMSNorm(x+residual), x+residual): vLLM's fused
// add + RMSNorm (RMSNorm.forward_native with a residual).
func (d *Device) AddRMSNorm(x, residual, w backend.Tensor, eps float32) (backend.Tensor, backend.Tensor) {
	sum := d.Add(x, residual)
	return d.RMSNorm(sum, w, eps), sum
}
