//go:build cuda

package cuda

import (
	"testing"

	"hsdb/engine/backend/cuda/driver"
	memplan "hsdb/engine/plan"
)

// TestW8A8WorkspacePlanned: the memory plan counts the cuBLASLt workspace
// FP8BlockLinear may take (no GPU needed).
func TestW8A8WorkspacePlanned(t *testing.T) {
	if driver.FP8BlockWorkspace != memplan.W8A8Workspace {
		t.Errorf("driver.FP8BlockWorkspace %d, plan.W8A8Workspace %d: the plan must count what cuBLASLt may take", driver.FP8BlockWorkspace, memplan.W8A8Workspace)
	}
}
