package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// TestPlanCPUStagesShareHost: `hsdb plan --device cpu --pp 2 --tp 2`
// plans the four workers hsdb --workers starts on this host; each stage
// compared only its own two ranks with --device-memory, so a host that
// holds one stage but not both read "fits: yes" (2 stages of 37 MiB in
// 50 MiB). The memory between the larger stage and all four workers
// (summed here from the ranks' totals the plan lists) now fails, naming
// the workers and the shortfall; the sum itself fits. GPU plans (a device
// per rank) are judged per rank as before.
func TestPlanCPUStagesShareHost(t *testing.T) {
	run := func(args ...string) (string, string, int) {
		var out, errOut bytes.Buffer
		code := hsdbMain(append([]string{"plan", "--model", "../../testdata/hf/llama", "--pp", "2", "--tp", "2"}, args...), stdio{Out: &out, Err: &errOut})
		return out.String(), errOut.String(), code
	}
	out, errs, code := run("--device", "cpu", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var got struct {
		Stages []struct {
			Plan struct {
				Ranks []map[string]int64 `json:"ranks"`
			} `json:"plan"`
		} `json:"stages"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil || len(got.Stages) != 2 {
		t.Fatalf("%v: %s", err, out)
	}
	var all, stageMax int64
	for _, st := range got.Stages {
		var s int64
		for _, r := range st.Plan.Ranks {
			s += r["total_bytes"]
		}
		if len(st.Plan.Ranks) != 2 || s <= 0 {
			t.Fatalf("stage ranks %v", st.Plan.Ranks)
		}
		all, stageMax = all+s, max(stageMax, s)
	}
	mid := (stageMax + all) / 2
	out, _, code = run("--device", "cpu", "--device-memory", fmt.Sprint(mid))
	if code != 1 || !strings.Contains(out, "fits: no, all stages: the 4 workers of 2 stages sharing the host") {
		t.Errorf("--device-memory %d (one stage %d, all %d): exit %d\n%s", mid, stageMax, all, code, out)
	}
	out, _, code = run("--device", "cpu", "--device-memory", fmt.Sprint(mid), "--json")
	var j struct {
		HostBytes int64 `json:"host_bytes"`
		Fits      bool  `json:"fits"`
	}
	if err := json.Unmarshal([]byte(out), &j); err != nil || code != 1 || j.Fits || j.HostBytes != all {
		t.Errorf("--json: exit %d, %+v (%v); want fits false, host_bytes %d", code, j, err, all)
	}
	if out, _, code = run("--device", "cpu", "--device-memory", fmt.Sprint(all)); code != 0 || !strings.Contains(out, "within") {
		t.Errorf("--device-memory %d (all workers): exit %d\n%s", all, code, out)
	}
	if _, errs, code = run("--device-memory", fmt.Sprint(mid)); code != 0 {
		t.Errorf("cuda, --device-memory %d: each rank has its own device: exit %d %s", mid, code, errs)
	}
}
