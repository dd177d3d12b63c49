package tokenizer

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestZZAtt(t *testing.T) {
	seqPre := func(n int) string {
		s := `{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false}`
		for i := 0; i < n; i++ {
			s = `{"type": "Sequence", "pretokenizers": [` + s + `]}`
		}
		return s
	}
	seqNorm := func(n int) string {
		s := `{"type": "NFC"}`
		for i := 0; i < n; i++ {
			s = `{"type": "Sequence", "normalizers": [` + s + `]}`
		}
		return s
	}
	many := func(n int) string {
		var sb strings.Builder
		for i := 0; i < n; i++ {
			fmt.Fprintf(&sb, `{"id": %d, "content": "<%s>", "special": true},`, 200+i, strings.Repeat("x", i%50+1)+fmt.Sprint(i))
		}
		return sb.String()
	}
	cases := [][]string{
		{`"pre_tokenizer": {"type": "Sequence", "pretokenizers": [
    {"type": "Split", "pattern": {"String": " "}, "behavior": "MergedWithNext", "invert": false},
    {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false}]}`, `"pre_tokenizer": ` + seqPre(5000)},
		{"NORMALIZER", seqNorm(5000)},
		{`"added_tokens": [`, `"added_tokens": [` + many(20000)},
		{`"added_tokens": [`, `"added_tokens": [{"id": 150, "content": "", "special": true},`},
		{`"added_tokens": [`, `"added_tokens": [{"id": 150, "content": "<X>", "special": true},`},
		{`"added_tokens": [`, `"added_tokens": [{"id": 4, "content": "<Q>", "special": true},`},
		{`"a": 0,`, `"a": 1e400,`},
		{`"a": 0,`, `"a": -0,`},
		{`"a": 0,`, `"a": 0.0,`},
		{`"merges": [`, `"merges": [["zz", "qq"],`},
		{`"merges": [`, `"merges": ["a b c",`},
		{`"merges": [`, `"merges": ["a b", "a b",`},
		{`"pattern": {"String": " "}`, `"pattern": {"Regex": "(((((((((a*)*)*)*)*)*)*)*)*)*"}`},
		{`"pattern": {"String": " "}`, `"pattern": {"Regex": "` + strings.Repeat("(", 10000) + strings.Repeat(")", 10000) + `"}`},
		{`"pattern": {"String": " "}`, `"pattern": {"Regex": "a{1000}{1000}{1000}"}`},
		{`"pattern": {"String": " "}`, `"pattern": {"String": ""}`},
	}
	for _, c := range cases {
		p := writeSynthHF(t, c...)
		s := time.Now()
		tk, err := LoadHF(p)
		msg := ""
		if err != nil {
			msg = err.Error()
			if len(msg) > 250 {
				msg = msg[:250]
			}
		}
		d := time.Since(s)
		enc := ""
		if tk != nil {
			s := time.Now()
			ids, err := tk.Encode(strings.Repeat("abc <X>Z cat ", 1000))
			enc = fmt.Sprintf("enc %d ids err=%v %v", len(ids), err, time.Since(s))
		}
		r := c[len(c)-1]
		if len(r) > 60 {
			r = r[:60]
		}
		t.Logf("%q: load %v err=%s %s", r, d, msg, enc)
	}
}
