package tokenizer

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

// TestSentencePieceRefusesPiecesAsSentencePiece: a model whose pieces
// SentencePiece refuses at load (ModelInterface::InitializePieces,
// model_interface.cc: "piece must not be empty", "must not include null
// character", "is already defined", "unk is already defined", "byte piece
// ... is found although `byte_fallback` is false", "byte piece ... is
// invalid") is refused with ErrFormat naming the piece; hsdb loaded all
// but the BYTE ones (go-sentencepiece's check, whose message quoted a 1 MB
// piece whole). Each model: <unk>, <s>, </s> (types UNKNOWN, CONTROL,
// CONTROL: ids 0..2 as trainer_spec's defaults say), then the pieces
// under test; model_type BPE.
func TestSentencePieceRefusesPiecesAsSentencePiece(t *testing.T) {
	type pc struct {
		text string
		typ  uint64
	}
	build := func(byteFallback bool, extra ...pc) []byte {
		var model []byte
		for _, p := range append([]pc{{"<unk>", spUnknown}, {"<s>", spControl}, {"</s>", spControl}}, extra...) {
			b := protowire.AppendTag(nil, 1, protowire.BytesType)
			b = protowire.AppendString(b, p.text)
			b = protowire.AppendTag(b, 3, protowire.VarintType)
			b = protowire.AppendVarint(b, p.typ)
			model = protowire.AppendTag(model, 1, protowire.BytesType)
			model = protowire.AppendBytes(model, b)
		}
		trainer := protowire.AppendTag(nil, 3, protowire.VarintType) // model_type
		trainer = protowire.AppendVarint(trainer, spModelBPE)
		if byteFallback {
			trainer = protowire.AppendTag(trainer, 35, protowire.VarintType) // byte_fallback
			trainer = protowire.AppendVarint(trainer, 1)
		}
		model = protowire.AppendTag(model, 2, protowire.BytesType)
		return protowire.AppendBytes(model, trainer)
	}
	big := strings.Repeat("x", 1<<20)
	for _, c := range []struct {
		name  string
		model []byte
		want  string
	}{
		{"an empty piece", build(false, pc{"a", spNormal}, pc{"", spNormal}), "piece 4 is empty"},
		{"a NUL byte", build(false, pc{"a\x00b", spNormal}), `piece 3 "a\x00b" holds a NUL byte`},
		{"a normal piece twice", build(false, pc{"ab", spNormal}, pc{"ab", spNormal}), `pieces 3 and 4 are both "ab"`},
		{"a control piece twice", build(false, pc{"<s>", spControl}), `pieces 1 and 3 are both "<s>"`},
		{"two unk pieces", build(false, pc{"<unk2>", spUnknown}), "pieces 0 and 3 are both of type UNKNOWN"},
		{"a byte piece without byte_fallback", build(false, pc{"<0x41>", spByte}), `piece 3 "<0x41>" is of type BYTE, but trainer_spec.byte_fallback is false`},
		{"a 1 MB byte piece", build(false, pc{big, spByte}), `piece 3 "` + big[:64] + `"... (1048576 bytes) is of type BYTE`},
		{"a byte piece in lower case", build(true, pc{"<0x4a>", spByte}), `piece 3 "<0x4a>" is of type BYTE, but not <0x00>..<0xFF>`},
	} {
		path := filepath.Join(t.TempDir(), "tokenizer.model")
		writeFile(t, path, c.model)
		_, err := LoadSentencePiece(path)
		if msg := fmt.Sprint(err); !errors.Is(err, ErrFormat) || !strings.Contains(msg, c.want) || !strings.Contains(msg, path) || len(msg) >= 1<<10 {
			t.Errorf("%s: %.300s; want ErrFormat naming %s and saying %.100q, under 1 KiB", c.name, msg, path, c.want)
		}
	}
}
