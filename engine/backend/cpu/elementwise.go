package cpu

import (
	"fmt"

	"hsdb/engine/backend"
	"hsdb/engine/tensor"
)

func sameShape(op string, a, b *tensor.Tensor) {
	if a.Numel() != b.Numel() || a.Rows() != b.Rows() {
		panic(&backend.DeviceError{Device: "cpu", Op: op, Err: fmt.Errorf("shapes %v and %v differ", a.Shape, b.Shape)})
	}
}

// Add returns a + b elementwise.
func (d *Device) Add(a, b backend.Tensor) backend.Tensor {
	sameShape("add", host(a), host(b))
	av, bv := f32(a), f32(b)
	res, y := d.newOutput(false, host(a).Shape...)
	bv = bv[:len(av)]
	for i := range y {
		y[i] = av[i] + bv[i]
	}
	return res
}

// Scale returns a · s elementwise.
func (d *Device) Scale(a backend.Tensor, s float32) backend.Tensor {
	av := f32(a)
	res, y := d.newOutput(false, host(a).Shape...)
	for i, v := range av {
		y[i] = v * s
	}
	return res
}

// SiluMul returns silu(gate)·up for gate, up [rows, n] f32, with silu(x) =
// x / (1 + e^-x) as PyTorch's F.silu (see siluMul for the rounding).
func (d *Device) SiluMul(gate, up backend.Tensor) backend.Tensor {
	sameShape("silu_mul", host(gate), host(up))
	g, u := f32(gate), f32(up)
	res, y := d.newOutput(false, host(gate).Shape...)
	siluMul(y, g, u)
	return res
}

// LinearF32 is Linear without bias: the CPU computes in float32 anyway.
func (d *Device) LinearF32(x, w backend.Tensor) backend.Tensor { return d.Linear(x, w, nil) }

// ToF32 returns x: CPU activations are float32 already.
func (d *Device) ToF32(x backend.Tensor) backend.Tensor {
	f32(x)
	return x
}
