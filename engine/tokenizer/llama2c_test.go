package tokenizer

import (
	"encoding/binary"
	"errors"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The expected ids below were derived by hand from tok512.bin, running
// run.c's encode() step by step. The relevant vocabulary entries (id piece
// score): 259 " t" -0, 260 "he" -1, 261 " a" -2, 263 " w" -4, 281 " he" -22,
// 288 "im" -29, 289 "on" -30, 290 "il" -31, 304 "or" -45, 306 "ll" -47,
// 307 " L" -48, 310 "ily" -51, 317 " Lily" -58, 318 " u" -59, 319 " O" -60,
// 321 " On" -62, 331 "ce" -72, 341 "ld" -82, 350 " up" -91, 369 "ime" -110,
// 378 " time" -119, 403 " Once" -144, 407 " upon" -148, 410 " " -151, single
// characters 411.. (e.g. 441 "O", 485 "é"), and the byte pieces 3.. (id =
// byte + 3).
func TestLlama2CEncodeHandDerived(t *testing.T) {
	tk := loadLlama2CTest(t)
	cases := []struct {
		text string
		want []int32
	}{
		// Empty text: no dummy prefix, nothing to merge.
		{"", []int32{}},
		// " "+"Once upon a time" as characters:
		// [410 441 416 429 411 410 425 427 414 416 410 412 410 413 417 423 411]
		// merges by descending score: " t"(-0) " a"(-2) "im"(-29) "on"(-30)
		// " u"(-59) " O"(-60) " On"(-62) "ce"(-72) " up"(-91) "ime"(-110)
		// " time"(-119) " Once"(-144) " upon"(-148) -> [403 407 261 378].
		{"Once upon a time", []int32{403, 407, 261, 378}},
		// [410 " ", 438 L, 417 i, 421 l, 422 y, 439 ', 419 s]: "il"(-31)
		// " L"(-48) "ily"(-51) " Lily"(-58); "'" and "s" have no merge.
		{"Lily's", []int32{317, 439, 419}},
		// Two spaces stay two pieces (no whitespace normalization):
		// [410 h e l l o 410 410 w o r l d]: "he"(-1) " w"(-4) " he"(-22)
		// "or"(-45) "ll"(-47) "ld"(-82); "  " is not a piece, so the second
		// space stays 410 and the first joins nothing ("o"+" " is no piece).
		{"hello  world", []int32{281, 306, 414, 410, 263, 304, 341}},
		// "é" (C3 A9) is piece 485; "中" (E4 B8 AD) is not a piece, so its
		// bytes fall back to 0xE4+3=231, 0xB8+3=187, 0xAD+3=176; no merges.
		{"é中", []int32{410, 485, 231, 187, 176}},
		// A NUL byte is the byte piece <0x00> (id 3); " a" merges (-2).
		{"a\x00b", []int32{261, 3, 430}},
		// Invalid UTF-8: 0xFF alone is not a piece -> 0xFF+3 = 258.
		{"\xff", []int32{410, 258}},
	}
	for _, c := range cases {
		got, err := tk.Encode(c.text)
		if err != nil {
			t.Fatalf("Encode(%q): %v", c.text, err)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("Encode(%q) = %v, want %v", c.text, got, c.want)
		}
	}
}

func TestLlama2CDecode(t *testing.T) {
	tk := loadLlama2CTest(t)
	if tk.VocabSize() != 512 || tk.BOS() != 1 || tk.EOS() != 2 || tk.Name() != "llama2c:tok512.bin" {
		t.Fatalf("VocabSize %d BOS %d EOS %d Name %q, want 512 1 2 llama2c:tok512.bin", tk.VocabSize(), tk.BOS(), tk.EOS(), tk.Name())
	}
	pieces := []struct {
		prev, id int32
		want     string
	}{
		{1, 403, "Once"},    // after BOS the leading space of " Once" goes
		{403, 407, " upon"}, // elsewhere it stays
		{1, 410, ""},        // " " after BOS is empty
		{5, 13, "\n"},       // <0x0A> is the raw byte 0x0A
		{1, 231, "\xe4"},    // one byte of a multi-byte character
		{7, 2, "\n</s>\n"},  // EOS is printed as stored, like run.c
		{7, 512, ""},        // out of range
		{7, -1, ""},         // out of range
	}
	for _, p := range pieces {
		if got := tk.DecodePiece(p.prev, p.id); got != p.want {
			t.Errorf("DecodePiece(%d, %d) = %q, want %q", p.prev, p.id, got, p.want)
		}
	}
	dec := []struct {
		ids  []int32
		want string
	}{
		{[]int32{403, 407, 261, 378}, "Once upon a time"},
		{[]int32{1, 403, 407, 2}, "Once upon"}, // BOS and EOS print nothing
		{[]int32{410, 485, 231, 187, 176}, "é中"},
		{[]int32{231, 187}, "\xe4\xb8"}, // raw bytes kept, not replaced
		{[]int32{403, 1, 407}, "Onceupon"},
	}
	for _, d := range dec {
		if got := tk.Decode(d.ids); got != d.want {
			t.Errorf("Decode(%v) = %q, want %q", d.ids, got, d.want)
		}
	}
}

// naiveLlama2CMerge is run.c's merge loop written out as plainly as
// possible: scan all adjacent pairs, take the strictly best score (first
// index wins ties), merge, repeat. It is the oracle for the heap version.
func naiveLlama2CMerge(t *Llama2C, ids []int32) []int32 {
	ids = append([]int32(nil), ids...)
	for {
		best, bestIdx, bestID := llama2cMinScore, -1, int32(-1)
		for i := 0; i+1 < len(ids); i++ {
			id, ok := t.lookup[t.pieces[ids[i]]+t.pieces[ids[i+1]]]
			if ok && t.scores[id] > best {
				best, bestIdx, bestID = t.scores[id], i, id
			}
		}
		if bestIdx < 0 {
			return ids
		}
		ids[bestIdx] = bestID
		ids = append(ids[:bestIdx+1], ids[bestIdx+2:]...)
	}
}

func TestLlama2CMergeMatchesNaiveScan(t *testing.T) {
	tk := loadLlama2CTest(t)
	rng := rand.New(rand.NewSource(1))
	alphabet := []string{"a", "e", "t", "h", "n", "o", " ", " ", "L", "i", "l", "y", "é", "中", "😀", "\n", ".", "\x80"}
	check := func(text string) {
		got, _ := tk.Encode(text)
		// The symbols before merging, built independently of Encode.
		var pre []int32
		if text != "" {
			pre = append(pre, 410)
		}
		for i := 0; i < len(text); {
			j := i + 1
			for j < len(text) && text[j]&0xC0 == 0x80 && j-i < 4 {
				j++
			}
			if id, ok := tk.lookup[text[i:j]]; ok {
				pre = append(pre, id)
			} else {
				for k := i; k < j; k++ {
					pre = append(pre, int32(text[k])+3)
				}
			}
			i = j
		}
		if want := naiveLlama2CMerge(tk, pre); !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Fatalf("Encode(%q) = %v, naive run.c scan gives %v", text, got, want)
		}
	}
	for _, s := range testStrings(t) {
		check(s)
	}
	for n := 0; n < 2000; n++ {
		var sb strings.Builder
		for k := rng.Intn(40); k > 0; k-- {
			sb.WriteString(alphabet[rng.Intn(len(alphabet))])
		}
		check(sb.String())
	}
}

// writeTok512Variant writes tok512.bin with edit applied to a copy and
// returns the path.
func writeTok512Variant(t *testing.T, edit func([]byte) []byte) string {
	t.Helper()
	data, err := os.ReadFile("testdata/tok512.bin")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "bad.bin")
	if err := os.WriteFile(p, edit(append([]byte(nil), data...)), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// tokenOffset returns the byte offset of token i's record in tok512.bin.
func tokenOffset(data []byte, i int) int {
	off := 4
	for k := 0; k < i; k++ {
		off += 8 + int(binary.LittleEndian.Uint32(data[off+4:]))
	}
	return off
}

func TestLoadLlama2CErrors(t *testing.T) {
	cases := []struct {
		name string
		edit func([]byte) []byte
		want string
	}{
		{"empty", func(b []byte) []byte { return b[:0] }, "max_token_length header"},
		{"truncated record", func(b []byte) []byte { return b[:tokenOffset(b, 300)+5] }, "token 300"},
		{"truncated piece", func(b []byte) []byte { return b[:tokenOffset(b, 511)+9] }, "token 511"},
		{"negative length", func(b []byte) []byte {
			off := tokenOffset(b, 42)
			binary.LittleEndian.PutUint32(b[off+4:], uint32(math.MaxUint32)) // -1
			return b
		}, "token 42"},
		{"length beyond file", func(b []byte) []byte {
			binary.LittleEndian.PutUint32(b[tokenOffset(b, 510)+4:], 1000)
			return b
		}, "token 510"},
		{"too few tokens", func(b []byte) []byte { return b[:tokenOffset(b, 100)] }, "100 tokens"},
		{"bad byte piece", func(b []byte) []byte {
			off := tokenOffset(b, 3+0x41)
			copy(b[off+8:], "<0x40>")
			return b
		}, "token 68"},
		{"max_token_length", func(b []byte) []byte {
			binary.LittleEndian.PutUint32(b, 3)
			return b
		}, "exceeds max_token_length 3"},
	}
	for _, c := range cases {
		p := writeTok512Variant(t, c.edit)
		_, err := LoadLlama2C(p)
		if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: err = %v, want ErrFormat naming %s and %q", c.name, err, p, c.want)
		}
	}
	if _, err := LoadLlama2C(filepath.Join(t.TempDir(), "missing.bin")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: err = %v, want os.ErrNotExist", err)
	}
}

func FuzzLlama2CEncode(f *testing.F) {
	for _, s := range []string{"", "Once upon a time", "  x  ", "é中😀", "\x80\x80\x80\x80\x80", "\xf0\x9f\x98"} {
		f.Add(s)
	}
	tk, err := LoadLlama2C("testdata/tok512.bin")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ids, err := tk.Encode(s)
		if err != nil {
			t.Fatal(err)
		}
		// Every id is in range, and the pieces (bytes for <0xXX>) spell the
		// dummy prefix plus the text: encoding loses nothing.
		var sb strings.Builder
		for i, id := range ids {
			if id < 0 || int(id) >= tk.VocabSize() {
				t.Fatalf("id %d out of range", id)
			}
			sb.WriteString(tk.DecodePiece(int32(i+10), id))
		}
		if want := map[bool]string{true: "", false: " " + s}[s == ""]; sb.String() != want {
			t.Fatalf("pieces of %q spell %q", s, sb.String())
		}
	})
}
