package check

import (
	"archive/zip"
	"bytes"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// ptFixtures returns the data.pkl of each pickle fixture and every storage
// record they hold, keyed by storage key.
func ptFixtures(tb testing.TB) (pkls [][]byte, storages map[string][]byte) {
	storages = map[string][]byte{}
	for _, name := range []string{"per_token_rows.pt", "good_speculators_bf16.pt", "evil_global.pt"} {
		zr, err := zip.OpenReader(filepath.Join(capturesDir, name))
		if err != nil {
			tb.Fatal(err)
		}
		for _, zf := range zr.File {
			b, err := readRecord(zf, 1<<24)
			if err != nil {
				tb.Fatal(err)
			}
			base := zf.Name[strings.Index(zf.Name, "/")+1:]
			if base == "data.pkl" {
				pkls = append(pkls, b)
			} else if strings.HasPrefix(base, "data/") {
				storages[strings.TrimPrefix(base, "data/")] = b
			}
		}
		zr.Close()
	}
	return pkls, storages
}

// storedArchive builds a torch.save-like archive in memory: a/data.pkl and
// a/data/KEY records, stored uncompressed as torch.save stores them.
func storedArchive(pkl []byte, storages map[string][]byte) []byte {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	put := func(name string, b []byte) {
		w, _ := zw.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Store})
		w.Write(b)
	}
	put("a/data.pkl", pkl)
	for _, k := range slices.Sorted(maps.Keys(storages)) {
		put("a/data/"+k, storages[k])
	}
	zw.Close()
	return buf.Bytes()
}

// readTorchBytes runs ReadTorch's reader on an archive held in memory.
func readTorchBytes(b []byte) (*CaptureFile, error) {
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnreadable, err)
	}
	return readTorchArchive("f.pt", zr, int64(len(b)))
}

// FuzzReadTorch mutates the pickles of the capture fixtures (the storage
// records stay those of the fixtures): the reader must return a tree or an
// error wrapping ErrUnreadable or ErrForbiddenGlobal, never panic (not
// even one the reader recovers from: "runtime error" in the message) or
// hang. The archive is built in memory, uncompressed: the former target wrote it
// to disk deflated on every execution, which with the go fuzzer's
// minimization of each new input (up to a minute at a few hundred
// executions a second) is what held it to a few thousand executions in 3
// minutes. The seeds run with go test.
func FuzzReadTorch(f *testing.F) {
	pkls, storages := ptFixtures(f)
	for _, p := range pkls {
		f.Add(p)
	}
	// A view of 3 elements with stride 2^63-1 (TestReadTorchStrideOverflow):
	// its size × stride wrapped around; it panicked inside the copy.
	f.Add([]byte("\x80\x02ctorch._utils\n_rebuild_tensor_v2\n(" +
		"(X\x07\x00\x00\x00storagectorch\nFloatStorage\nX\x01\x00\x00\x000X\x03\x00\x00\x00cpuK\x06tQ" +
		"K\x00K\x03\x85\x8a\x08\xff\xff\xff\xff\xff\xff\xff\x7f\x85\x89NtR."))
	f.Fuzz(func(t *testing.T, pkl []byte) {
		cf, err := readTorchBytes(storedArchive(pkl, storages))
		if err != nil && !errors.Is(err, ErrUnreadable) && !errors.Is(err, ErrForbiddenGlobal) {
			t.Fatalf("error of no kind: %v", err)
		}
		if err != nil && strings.Contains(err.Error(), "runtime error") {
			t.Fatalf("a Go panic turned into an error (an input the reader does not check): %v", err)
		}
		if err == nil {
			cf.Structure()
			InterpretCapture(cf)
		}
	})
}

// FuzzReadTorchFile mutates whole torch.save files (zip directory, headers,
// records and pickle together): same contract as FuzzReadTorch. The seeds
// are small archives (a transposed view of 6 floats, a dict of it, and
// per_token_rows.pt rebuilt without torch's 64-byte alignment padding),
// and inputs over 16 KiB are skipped: the go fuzzer minimizes every input
// that finds new coverage by re-running it once per byte removed, so the
// 10–17 KB fixtures themselves held the former target to a few dozen
// executions a minute.
func FuzzReadTorchFile(f *testing.F) {
	view := "ctorch._utils\n_rebuild_tensor_v2\n(" +
		"(X\x07\x00\x00\x00storagectorch\nFloatStorage\nX\x01\x00\x00\x000X\x03\x00\x00\x00cpuK\x06tQ" +
		"K\x01K\x02K\x02\x86K\x01K\x02\x86\x89NtR"
	st := map[string][]byte{"0": make([]byte, 24)}
	pkls, storages := ptFixtures(f)
	per := map[string][]byte{}
	for _, k := range []string{"0", "1", "2"} {
		per[k] = storages[k]
	}
	for _, seed := range [][]byte{
		storedArchive([]byte("\x80\x02"+view+"."), st),
		storedArchive([]byte("\x80\x02}q\x00(X\x0d\x00\x00\x00hidden_states"+view+"X\x09\x00\x00\x00input_idsK\x05u."), st),
		storedArchive(pkls[0], per),
	} {
		if _, err := readTorchBytes(seed); err != nil {
			f.Fatalf("seed: %v", err)
		}
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 1<<14 {
			return
		}
		cf, err := readTorchBytes(b)
		if err != nil && !errors.Is(err, ErrUnreadable) && !errors.Is(err, ErrForbiddenGlobal) {
			t.Fatalf("error of no kind: %v", err)
		}
		if err != nil && strings.Contains(err.Error(), "runtime error") {
			t.Fatalf("a Go panic turned into an error (an input the reader does not check): %v", err)
		}
		if err == nil {
			cf.Structure()
			InterpretCapture(cf)
		}
	})
}

// TestReadTorchMutations: 1500 deterministic mutations (PCG seed 5) of the
// fixtures' pickles — flipped, inserted, deleted, duplicated and saturated
// bytes — each read back as a tree or an error wrapping ErrUnreadable or
// ErrForbiddenGlobal; none panics or hangs. (A longer run of the same loop,
// 50,000 mutations, found nothing either.)
func TestReadTorchMutations(t *testing.T) {
	seeds, storages := ptFixtures(t)
	r := rand.New(rand.NewPCG(5, 6))
	for it := range 1500 {
		p := append([]byte(nil), seeds[r.IntN(len(seeds))]...)
		for range 1 + r.IntN(6) {
			i := r.IntN(len(p))
			switch r.IntN(5) {
			case 0:
				p[i] = byte(r.IntN(256))
			case 1:
				p = append(p[:i:i], append([]byte{byte(r.IntN(256))}, p[i:]...)...)
			case 2:
				p = append(p[:i:i], p[min(len(p), i+r.IntN(20)):]...)
			case 3:
				k := r.IntN(len(p))
				p = append(p[:k:k], append(append([]byte(nil), p[i:min(len(p), i+r.IntN(40))]...), p[k:]...)...)
			case 4:
				v := []byte{0, 0xff, 0x7f, 0x80, 1, 2}[r.IntN(6)]
				for q := i; q < min(len(p), i+4); q++ {
					p[q] = v
				}
			}
			if len(p) == 0 {
				p = []byte{'.'}
			}
		}
		cf, err := readTorchBytes(storedArchive(p, storages))
		if err != nil && !errors.Is(err, ErrUnreadable) && !errors.Is(err, ErrForbiddenGlobal) {
			t.Fatalf("mutation %d: error of no kind: %v", it, err)
		}
		if err == nil {
			InterpretCapture(cf)
		}
	}
}
