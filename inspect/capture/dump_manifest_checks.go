package capture

import (
	"fmt"
	"sort"
)

// checkManifestSizes says what is wrong with a manifest's sizes, or nil:
// every model.dims entry a size (>= 0; hidden_size at least 1), the world
// size a count of ranks (>= 1: "Rerun with --tp -3" was advised) and every
// captured layer an index (>= 0). A hidden_size of -5 or 0 read as
// "unknown", and `check` then passed a dump whose widths nothing checked.
func checkManifestSizes(m *Manifest) error {
	keys := make([]string, 0, len(m.Model.Dims))
	for k := range m.Model.Dims {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if v := m.Model.Dims[k]; v < 0 || (k == "hidden_size" && v == 0) {
			return fmt.Errorf("model.dims.%s is %d, want a size of the model (hidden_size at least 1, others at least 0)", k, v)
		}
	}
	if m.Model.WorldSize < 1 {
		return fmt.Errorf("model.world_size is %d, want the count of tensor-parallel ranks it was captured on (>= 1)", m.Model.WorldSize)
	}
	for i, l := range m.Capture.Layers {
		if l < 0 {
			return fmt.Errorf("capture.layers[%d] is %d, want a decoder layer index (>= 0)", i, l)
		}
	}
	return nil
}

// checkManifestCapture says what is wrong with what a manifest claims its
// files hold, or nil: capture.dtype one of the dtypes a dump is written in
// (F32, BF16, F16: DumpOptions.DType; absent: no claim), capture.what one
// of ParseWhat's (or empty: a dump of site captures alone), capture.format
// one hsdb writes (absent, speculators, specforge). check takes the claims
// as the rules' expectations, and an unknown one was read as "no
// expectation": a dtype of "Q99" or a what of "zzz" passed files of any
// dtype and any site.
func checkManifestCapture(c *CaptureInfo) error {
	switch c.DType {
	case "", "F32", "BF16", "F16":
	default:
		return fmt.Errorf("capture.dtype %s, want F32, BF16 or F16 (the dtype the files were written in)", QuoteFileText(c.DType))
	}
	switch c.What {
	case "", WhatStream, WhatHidden, WhatResidual:
	default:
		return fmt.Errorf("capture.what %s, want %s, %s or %s", QuoteFileText(c.What), WhatStream, WhatHidden, WhatResidual)
	}
	switch Format(c.Format) {
	case "", FormatHsdb, FormatSpeculators, FormatSpecForge:
	default:
		return fmt.Errorf("capture.format %s, want %s or %s (absent for hsdb's own)", QuoteFileText(c.Format), FormatSpeculators, FormatSpecForge)
	}
	return nil
}
