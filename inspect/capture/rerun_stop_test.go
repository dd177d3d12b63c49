package capture

import (
	"errors"
	"hsdb/engine/enginetest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// dirListing is every file under dir with its bytes, by slash path.
func dirListing(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil || len(out) == 0 {
		t.Fatalf("listing %s: %v (%d files)", dir, err, len(out))
	}
	return out
}

// TestRerunStops: a rerun re-reads every file before capturing anything
// (a finished dump's, to report it complete; a staging directory's
// validated ones, to keep them), and Ctrl-C or SIGTERM (the job's
// ctx.Done(), DumpOptions.Stop) was not looked at there: on a dump of
// terabytes the first signal did nothing for hours and the second quit
// saying a worker was not answering. Stop closed now ends either between
// files with ErrInterrupted, nothing changed.
func TestRerunStops(t *testing.T) {
	seqs, reps, info := smallCapture(t)
	stop := make(chan struct{})
	close(stop)

	out := filepath.Join(t.TempDir(), "d")
	if err := runJob(out, seqs, reps, info, -1); err != nil {
		t.Fatal(err)
	}
	before := dirListing(t, out)
	_, err := ResumeDump(out, info, DumpOptions{Stop: stop})
	if !errors.Is(err, ErrInterrupted) || errors.Is(err, ErrComplete) || !strings.Contains(err.Error(), "while verifying the finished dump, after 0 of") {
		t.Errorf("finished dump, stopped: %v; want ErrInterrupted while verifying", err)
	}
	if after := dirListing(t, out); len(after) != len(before) {
		t.Errorf("finished dump: %d files before, %d after", len(before), len(after))
	} else {
		for k, v := range before {
			if after[k] != v {
				t.Errorf("finished dump: %s changed", k)
			}
		}
	}
	if _, err := ResumeDump(out, info, DumpOptions{}); !errors.Is(err, ErrComplete) {
		t.Errorf("finished dump, not stopped: %v; want ErrComplete", err)
	}

	out = filepath.Join(t.TempDir(), "d")
	if err := runJob(out, seqs, reps, info, 2); !errors.Is(err, errCrashed) {
		t.Fatalf("job killed after 2: %v", err)
	}
	before = dirListing(t, out+PartialSuffix)
	_, err = ResumeDump(out, info, DumpOptions{Stop: stop})
	if !errors.Is(err, ErrInterrupted) || !strings.Contains(err.Error(), "while re-reading the validated files of") {
		t.Errorf("staging directory, stopped: %v; want ErrInterrupted while re-reading", err)
	}
	after := dirListing(t, out+PartialSuffix)
	if len(after) != len(before) {
		t.Errorf("staging directory: %d files before, %d after", len(before), len(after))
	}
	for k, v := range before {
		if after[k] != v {
			t.Errorf("staging directory: %s changed", k)
		}
	}
	if err := runJob(out, seqs, reps, info, -1); err != nil {
		t.Errorf("the job again, not stopped: %v", err)
	}
}

// TestResumeStageHeaderSizes: a staging directory's manifest header whose
// model.world_size is -3 was compared as a world size, and the resume
// said "captured at --tp -3 ... Rerun with --tp -3"; it is refused as an
// invalid manifest naming the field, as a finished dump's is
// (ReadManifest), with --force offered.
func TestResumeStageHeaderSizes(t *testing.T) {
	seqs, reps, info := smallCapture(t)
	out := filepath.Join(t.TempDir(), "d")
	if err := runJob(out, seqs, reps, info, 2); !errors.Is(err, errCrashed) {
		t.Fatalf("job killed after 2: %v", err)
	}
	enginetest.EditJSON(t, filepath.Join(out+PartialSuffix, ManifestName), func(m map[string]any) {
		m["model"].(map[string]any)["world_size"] = -3
	})
	_, err := ResumeDump(out, info, DumpOptions{})
	if !errors.Is(err, ErrManifest) || !strings.Contains(err.Error(), "model.world_size is -3") || !strings.Contains(err.Error(), "--force") || strings.Contains(err.Error(), "--tp -3") {
		t.Errorf("staging header of world_size -3: %v; want ErrManifest naming model.world_size and --force", err)
	}
}
