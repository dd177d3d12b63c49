package tokenizer

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// referenceScript is the command that writes testdata/*.expected.json.
const referenceScript = "python3 scripts/tokenizer_reference.py --out engine/tokenizer/testdata (run from the repository root where HF tokenizers and sentencepiece are installed)"

// testStrings returns the lines of testdata/strings.txt, each a JSON string.
func testStrings(t testing.TB) []string {
	t.Helper()
	data, err := os.ReadFile("testdata/strings.txt")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for i, line := range bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n")) {
		var s string
		if err := json.Unmarshal(line, &s); err != nil {
			t.Fatalf("testdata/strings.txt line %d: %v", i+1, err)
		}
		out = append(out, s)
	}
	return out
}

func fileSHA256(t testing.TB, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

var (
	hfDirOnce  sync.Once
	hfDir      string
	hfDirErr   error
	hfTokCache sync.Map // name -> *HF
)

// hfTestFile gunzips testdata/<name>.tokenizer.json.gz into a directory of
// its own (with the matching tokenizer_config.json beside it) and returns
// the tokenizer.json path. The files live for the whole test binary.
func hfTestFile(t testing.TB, name string) string {
	t.Helper()
	hfDirOnce.Do(func() { hfDir, hfDirErr = os.MkdirTemp("", "hsdb-tokenizer-test-") })
	if hfDirErr != nil {
		t.Fatal(hfDirErr)
	}
	dir := filepath.Join(hfDir, name)
	dst := filepath.Join(dir, "tokenizer.json")
	if _, err := os.Stat(dst); err == nil {
		return dst
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	src, err := os.Open(filepath.Join("testdata", name+".tokenizer.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	zr, err := gzip.NewReader(src)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := io.Copy(&buf, zr); err != nil {
		t.Fatal(err)
	}
	cfg, err := os.ReadFile(filepath.Join("testdata", name+".tokenizer_config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst+".tmp", buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(dst+".tmp", dst); err != nil {
		t.Fatal(err)
	}
	return dst
}

// loadHFTest returns the HF tokenizer for testdata/<name>, loaded once.
func loadHFTest(t testing.TB, name string) *HF {
	t.Helper()
	if v, ok := hfTokCache.Load(name); ok {
		return v.(*HF)
	}
	tk, err := LoadHF(hfTestFile(t, name))
	if err != nil {
		t.Fatal(err)
	}
	hfTokCache.Store(name, tk)
	return tk
}

func loadLlama2CTest(t testing.TB) *Llama2C {
	t.Helper()
	tk, err := LoadLlama2C("testdata/tok512.bin")
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

func loadSentencePieceTest(t testing.TB) *SentencePiece {
	t.Helper()
	tk, err := LoadSentencePiece("testdata/tok512.model")
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

func TestMain(m *testing.M) {
	code := m.Run()
	if hfDir != "" {
		os.RemoveAll(hfDir)
	}
	os.Exit(code)
}
