package tokenizer

import (
	"fmt"
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// spSpec holds the TrainerSpec and NormalizerSpec fields of a SentencePiece
// ModelProto that decide how text is encoded and decoded, with the defaults
// of sentencepiece_model.proto for absent fields.
type spSpec struct {
	modelType              int32 // 1 unigram, 2 BPE, 3 word, 4 char
	byteFallback           bool
	treatWSAsSuffix        bool
	unkID, bosID, eosID    int32
	unkSurface             string
	normName               string
	charsmap               []byte
	addDummyPrefix         bool
	removeExtraWhitespaces bool
	escapeWhitespaces      bool
}

type spModel struct {
	pieces []spPiece
	spec   spSpec
}

const spModelBPE = 2

// spNormalizerOverride is a serialized ModelProto fragment: field 3
// (normalizer_spec) holding add_dummy_prefix=false (field 3) and
// remove_extra_whitespaces=false (field 4).
var spNormalizerOverride = func() []byte {
	var inner []byte
	inner = protowire.AppendTag(inner, 3, protowire.VarintType)
	inner = protowire.AppendVarint(inner, 0)
	inner = protowire.AppendTag(inner, 4, protowire.VarintType)
	inner = protowire.AppendVarint(inner, 0)
	var out []byte
	out = protowire.AppendTag(out, 3, protowire.BytesType)
	return protowire.AppendBytes(out, inner)
}()

// maxSPPieces is the most pieces a SentencePiece model may hold,
// MaxTokenID + 1 (a test lowers it).
var maxSPPieces = MaxTokenID + 1

// parseSPModel decodes the fields hsdb needs from a ModelProto
// (sentencepiece_model.proto: pieces = 1, trainer_spec = 2,
// normalizer_spec = 3). Several occurrences of a message field are merged,
// as protobuf decoding does.
func parseSPModel(data []byte) (*spModel, error) {
	m := &spModel{spec: spSpec{
		modelType: 1, unkID: 0, bosID: 1, eosID: 2, unkSurface: " \u2047 ",
		addDummyPrefix: true, removeExtraWhitespaces: true, escapeWhitespaces: true,
	}}
	// Count the pieces first: the slice is made once, and a file of
	// millions of empty pieces (two bytes each: 50 million in 100 MB
	// took 5.9 GB and 48 s) is refused before any is decoded.
	count := 0
	err := walkProto(data, "ModelProto", func(num protowire.Number, typ protowire.Type, v uint64, b []byte) error {
		if num == 1 && typ == protowire.BytesType {
			if count++; count > maxSPPieces {
				return fmt.Errorf("%w: ModelProto has more than %d pieces (MaxTokenID + 1)", ErrFormat, maxSPPieces)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	m.pieces = make([]spPiece, 0, count)
	err = walkProto(data, "ModelProto", func(num protowire.Number, typ protowire.Type, v uint64, b []byte) error {
		switch {
		case num == 1 && typ == protowire.BytesType:
			p, err := parseSPPiece(b, len(m.pieces))
			if err != nil {
				return err
			}
			m.pieces = append(m.pieces, p)
		case num == 2 && typ == protowire.BytesType:
			return walkProto(b, "trainer_spec", func(num protowire.Number, typ protowire.Type, v uint64, b []byte) error {
				s := &m.spec
				switch num {
				case 3:
					s.modelType = int32(v)
				case 24:
					s.treatWSAsSuffix = v != 0
				case 35:
					s.byteFallback = v != 0
				case 40:
					s.unkID = int32(v)
				case 41:
					s.bosID = int32(v)
				case 42:
					s.eosID = int32(v)
				case 44:
					s.unkSurface = string(b)
				}
				return nil
			})
		case num == 3 && typ == protowire.BytesType:
			return walkProto(b, "normalizer_spec", func(num protowire.Number, typ protowire.Type, v uint64, b []byte) error {
				s := &m.spec
				switch num {
				case 1:
					s.normName = string(b)
				case 2:
					s.charsmap = append([]byte(nil), b...)
				case 3:
					s.addDummyPrefix = v != 0
				case 4:
					s.removeExtraWhitespaces = v != 0
				case 5:
					s.escapeWhitespaces = v != 0
				}
				return nil
			})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(m.pieces) == 0 {
		return nil, fmt.Errorf("%w: ModelProto has no pieces", ErrFormat)
	}
	return m, nil
}

func parseSPPiece(data []byte, index int) (spPiece, error) {
	p := spPiece{typ: spNormal}
	err := walkProtoNamed(data, func() string { return fmt.Sprintf("piece %d", index) }, func(num protowire.Number, typ protowire.Type, v uint64, b []byte) error {
		switch num {
		case 1:
			p.text = string(b)
		case 2:
			p.score = math.Float32frombits(uint32(v))
		case 3:
			p.typ = int32(v)
		}
		return nil
	})
	if err == nil && (p.typ < spNormal || p.typ > spByte) {
		err = fmt.Errorf("%w: piece %d (%s) has type %d, want 1..6", ErrFormat, index, quoteClip(p.text), p.typ)
	}
	return p, err
}

// walkProto calls fn for every field of a serialized message. For varint
// and fixed fields v holds the value; for length-delimited fields b holds
// the bytes. A truncated or malformed encoding gives an ErrFormat error
// naming what (the message) and the byte offset.
func walkProto(data []byte, what string, fn func(num protowire.Number, typ protowire.Type, v uint64, b []byte) error) error {
	return walkProtoNamed(data, func() string { return what }, fn)
}

// walkProtoNamed is walkProto with the message's name made only for an
// error (a name formatted for each of millions of pieces cost more than
// the pieces).
func walkProtoNamed(data []byte, whatFn func() string, fn func(num protowire.Number, typ protowire.Type, v uint64, b []byte) error) error {
	for off := 0; off < len(data); {
		num, typ, n := protowire.ConsumeTag(data[off:])
		if n < 0 {
			return fmt.Errorf("%w: %s: bad field tag at byte %d: %v", ErrFormat, whatFn(), off, protowire.ParseError(n))
		}
		off += n
		var v uint64
		var b []byte
		switch typ {
		case protowire.VarintType:
			v, n = protowire.ConsumeVarint(data[off:])
		case protowire.Fixed32Type:
			var x uint32
			x, n = protowire.ConsumeFixed32(data[off:])
			v = uint64(x)
		case protowire.Fixed64Type:
			v, n = protowire.ConsumeFixed64(data[off:])
		case protowire.BytesType:
			b, n = protowire.ConsumeBytes(data[off:])
		default:
			n = protowire.ConsumeFieldValue(num, typ, data[off:])
		}
		if n < 0 {
			return fmt.Errorf("%w: %s: field %d at byte %d: %v", ErrFormat, whatFn(), num, off, protowire.ParseError(n))
		}
		off += n
		if err := fn(num, typ, v, b); err != nil {
			return err
		}
	}
	return nil
}
