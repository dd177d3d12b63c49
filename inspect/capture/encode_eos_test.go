package capture

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"hsdb/engine/enginetest"
	"hsdb/engine/tokenizer"
)

// TestEncodeTextAppendsEOS: a text row (and `input text`) of a tokenizer
// whose tokenizer_config.json says add_bos_token and add_eos_token true
// runs as transformers' tokenizer("hi").input_ids: <s> (3), "hi" (2, the
// h+i merge), </s> (4), derived by hand; and the EOS counts against
// max_position_embeddings: 3 ids fit 3 positions, not 2. Before, the row
// ran as [3 2], unlike what the trainer's tokenizer gives.
func TestEncodeTextAppendsEOS(t *testing.T) {
	dir := t.TempDir()
	enginetest.WriteEOSTokenizer(t, dir)
	tok, err := tokenizer.LoadHF(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	ids, why, err := Limits{MaxPositions: 3}.EncodeText(tok, "hi")
	if err != nil || why != "" || !slices.Equal(ids, []int32{3, 2, 4}) {
		t.Errorf("EncodeText(\"hi\") in 3 positions: %v, %q, %v; want [3 2 4]", ids, why, err)
	}
	ids, why, err = Limits{MaxPositions: 2}.EncodeText(tok, "hi")
	if err != nil || !strings.Contains(why, "more than max_position_embeddings 2 tokens with BOS and EOS") {
		t.Errorf("EncodeText(\"hi\") in 2 positions: %v, %q, %v; want it refused naming BOS and EOS", ids, why, err)
	}
}
