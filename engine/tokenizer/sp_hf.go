package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"hsdb/engine/jsonerr"
	"hsdb/engine/regfile"
)

// The transformers classes a bare tokenizer.model can become (spHF.class),
// and the reference they are named after.
const (
	spClassLlama   = "LlamaTokenizer"
	spClassBackend = "TokenizersBackend"
	spHFReference  = "transformers 5.17"
)

// spPrepend is when the HF pipeline puts a "▁" before a stretch of text
// (tokenizers' Metaspace prepend_scheme).
type spPrepend int

const (
	spPrependNever  spPrepend = iota // no Metaspace pre-tokenizer (TokenizersBackend)
	spPrependFirst                   // only the stretch at offset 0 (LlamaTokenizer, legacy false)
	spPrependAlways                  // every stretch between special tokens (legacy true)
)

// spHF is how HF transformers encodes a bare SentencePiece tokenizer.model
// that a tokenizer_config.json accompanies (LoadSentencePieceDir).
type spHF struct {
	class            string    // spClassLlama or spClassBackend
	why              string    // which files and fields chose class, for Name
	prepend          spPrepend // Metaspace's prepend scheme
	bos, eos         int32     // bos_token and eos_token ids, -1 for null
	textBOS, textEOS int32     // what the post_processor adds, -1 for none
	added            *addedMatcher
}

// LoadSentencePieceDir loads the tokenizer.model at path as HF
// transformers 5.17's AutoTokenizer.from_pretrained loads it from a
// directory without tokenizer.json, when a tokenizer_config.json lies
// beside it; without one (a model `hsdb convert llama2c` wrote), it is
// LoadSentencePiece: sentencepiece's encoding with llama2.c run.c's BOS.
//
// transformers picks the class from tokenizer_config.json's
// tokenizer_class and config.json's model_type (AutoTokenizer.from_pretrained,
// models/auto/tokenization_auto.py, where "llama" has no entry in
// TOKENIZER_MAPPING_NAMES):
//
//   - tokenizer_class LlamaTokenizer (or LlamaTokenizerFast), with
//     model_type llama or none: LlamaTokenizer (models/llama/
//     tokenization_llama.py): no normalizer, a Metaspace pre-tokenizer
//     that turns every space into "▁" and puts a "▁" before the text
//     unless it starts with one (prepend_scheme "first"; "always", before
//     every stretch between special tokens, with legacy true; none with
//     add_prefix_space false), and BPE over the whole text.
//   - no tokenizer_class with model_type llama or none, or tokenizer_class
//     TokenizersBackend: TokenizersBackend built from the proto
//     (SpmConverter.build_tokenizer_from_spm_proto in
//     convert_slow_tokenizer.py): a Replace(" ", "▁") normalizer and no
//     pre-tokenizer, so no "▁" goes before the text, and the proto's
//     add_dummy_prefix and remove_extra_whitespaces are not applied.
//
// Neither applies SentencePiece's removal of extra spaces. Both cut the
// model's control, unknown and user-defined pieces, bos_token, eos_token
// and added_tokens_decoder's tokens out of the text first (special added
// tokens, normalized=false), and add a BOS only when add_bos_token is true
// and an EOS only when add_eos_token is true (TokenizersBackend.__init__
// defaults both to false, null counts as false, and update_post_processor
// builds the template "[bos:0 ]$A:0[ eos:0]";
// tokenization_utils_tokenizers.py): TextBOS and TextEOS.
//
// Errors: ErrFormat for a malformed tokenizer_config.json or config.json
// (naming the file and field); ErrUnsupported, naming the field, for what
// hsdb cannot reproduce exactly: another tokenizer_class, a model_type
// other than llama (transformers' class then depends on its tokenizer
// table), a bos/eos/unk token that is not a piece of the model (transformers
// would add a new id), added tokens with lstrip, rstrip or single_word, a
// model without byte_fallback, with unused pieces, or whose normal pieces'
// scores do not fall strictly with their ids (transformers ranks BPE merges
// by piece id, sentencepiece by score).
func LoadSentencePieceDir(path string) (*SentencePiece, error) {
	t, err := LoadSentencePiece(path)
	if err != nil {
		return nil, err
	}
	dir := filepath.Dir(path)
	cfgPath := filepath.Join(dir, "tokenizer_config.json")
	cfg, err := readOptionalJSON(cfgPath)
	if err != nil || cfg == nil {
		return t, err
	}
	modelType, err := configModelType(filepath.Join(dir, "config.json"))
	if err != nil {
		return nil, err
	}
	hf, err := t.hfConvention(cfg, modelType)
	if err != nil {
		return nil, fmt.Errorf("sentencepiece %s with %s: %w", path, cfgPath, err)
	}
	t.hf = hf
	t.name += " as " + spHFReference + " " + hf.class + " (" + hf.why + ")"
	return t, nil
}

// readOptionalJSON reads a JSON object file; an absent file is nil, nil.
func readOptionalJSON(path string) (map[string]json.RawMessage, error) {
	data, err := regfile.ReadFile(path, MaxFileBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("sentencepiece: %w", err)
	}
	if err := jsonerr.CheckSurrogates(data); err != nil {
		return nil, fmt.Errorf("%s: %w: %v", path, ErrFormat, err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%s: %w: %v", path, ErrFormat, jsonerr.Explain(err))
	}
	if m == nil {
		m = map[string]json.RawMessage{}
	}
	return m, nil
}

// configModelType is config.json's model_type, "" when the file or the
// field is absent (transformers then has a PreTrainedConfig whose
// model_type is "").
func configModelType(path string) (string, error) {
	cfg, err := readOptionalJSON(path)
	if err != nil || cfg == nil {
		return "", err
	}
	var mt string
	if raw, ok := cfg["model_type"]; ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, &mt); err != nil {
			return "", fmt.Errorf("%s: %w: model_type: want a string, got %s", path, ErrFormat, briefJSON(raw))
		}
	}
	return mt, nil
}

// hfConvention reads tokenizer_config.json (cfg) for a model whose
// config.json says modelType, as LoadSentencePieceDir describes.
func (t *SentencePiece) hfConvention(cfg map[string]json.RawMessage, modelType string) (*spHF, error) {
	class, err := optString(cfg, "tokenizer_class")
	if err != nil {
		return nil, err
	}
	h := &spHF{prepend: spPrependNever}
	mtWords := "no config.json model_type"
	if modelType != "" {
		mtWords = "config.json model_type " + quoteClip(modelType)
	}
	switch base := strings.TrimSuffix(class, "Fast"); {
	case modelType != "" && modelType != "llama":
		return nil, fmt.Errorf("%w: config.json model_type %s: hsdb knows which class %s's AutoTokenizer builds from a bare tokenizer.model only for model_type llama or none", ErrUnsupported, quoteClip(modelType), spHFReference)
	case class == "":
		h.class, h.why = spClassBackend, "no tokenizer_class, "+mtWords
	case class == spClassBackend:
		h.class, h.why = spClassBackend, "tokenizer_class TokenizersBackend"
	case base == spClassLlama:
		h.class, h.why = spClassLlama, "tokenizer_class "+class+", "+mtWords
	default:
		return nil, fmt.Errorf("%w: tokenizer_class %s: hsdb reproduces LlamaTokenizer and TokenizersBackend (or none) for a bare tokenizer.model", ErrUnsupported, quoteClip(class))
	}
	if err := t.checkHFMerges(); err != nil {
		return nil, err
	}
	if h.class == spClassLlama {
		// add_prefix_space None means True; legacy None tests false.
		prefix, err := optBool(cfg, "add_prefix_space", true, true)
		if err != nil {
			return nil, err
		}
		legacy, err := optBool(cfg, "legacy", false, false)
		if err != nil {
			return nil, err
		}
		switch {
		case !prefix:
			h.prepend = spPrependNever
		case legacy:
			h.prepend = spPrependAlways
		default:
			h.prepend = spPrependFirst
		}
	}
	// Special tokens: LlamaTokenizer's defaults are "<s>", "</s>" and
	// "<unk>"; TokenizersBackend takes the proto's pieces.
	pieceID := map[string]int32{}
	for i, p := range t.piece {
		if _, dup := pieceID[p.text]; !dup {
			pieceID[p.text] = int32(i)
		}
	}
	defaults := map[string]string{"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"}
	if h.class == spClassBackend {
		defaults = map[string]string{"bos_token": t.pieceText(t.spec.bosID), "eos_token": t.pieceText(t.spec.eosID), "unk_token": t.pieceText(t.spec.unkID)}
	}
	var pats []string
	var toks []*hfAddedToken
	addTok := func(content string, id int32) {
		pats = append(pats, content)
		toks = append(toks, &hfAddedToken{ID: id, Content: content, Special: true})
	}
	h.bos, h.eos = -1, -1
	for _, f := range []struct {
		key string
		dst *int32
	}{{"bos_token", &h.bos}, {"eos_token", &h.eos}, {"unk_token", nil}} {
		content, set, err := tokenContent(cfg, f.key)
		if err != nil {
			return nil, err
		}
		if !set {
			content = defaults[f.key]
		}
		if content == "" { // null, or the proto has no such piece
			continue
		}
		id, ok := pieceID[content]
		if !ok {
			return nil, fmt.Errorf("%w: %s %s is not a piece of the model (transformers would add it as a new token)", ErrUnsupported, f.key, quoteClip(content))
		}
		if f.dst != nil {
			*f.dst = id
		}
		addTok(content, id)
	}
	for i, p := range t.piece {
		if p.typ == spControl || p.typ == spUnknown || p.typ == spUserDefined {
			addTok(p.text, int32(i))
		}
	}
	if err := t.addedDecoder(cfg, addTok); err != nil {
		return nil, err
	}
	if h.added, err = newAddedMatcher(pats, toks); err != nil {
		return nil, fmt.Errorf("added tokens and control pieces: %w", err)
	}
	h.textBOS, h.textEOS = -1, -1
	for _, f := range []struct {
		key string
		id  int32
		dst *int32
	}{{"add_bos_token", h.bos, &h.textBOS}, {"add_eos_token", h.eos, &h.textEOS}} {
		add, err := optBool(cfg, f.key, false, false)
		if err != nil {
			return nil, err
		}
		if add && f.id >= 0 {
			*f.dst = f.id
		}
	}
	return h, nil
}

// pieceText is the text of piece id, or "" for an id outside the model.
func (t *SentencePiece) pieceText(id int32) string {
	if id < 0 || int(id) >= len(t.piece) {
		return ""
	}
	return t.piece[id].text
}

// checkHFMerges refuses the models on which transformers' BPE (merges
// generated from the pieces in id order, generate_merges, byte fallback)
// and sentencepiece's BPE (highest score first) can part: no
// byte_fallback, unused pieces (merges of transformers can produce them),
// and normal pieces whose scores do not fall strictly with their ids.
func (t *SentencePiece) checkHFMerges() error {
	if !t.spec.byteFallback {
		return fmt.Errorf("%w: trainer_spec.byte_fallback is false (transformers then fuses unknown characters into one unk, TokenizersBackend, or has no unk_token, LlamaTokenizer; hsdb reproduces neither)", ErrUnsupported)
	}
	prev := -1
	for i, p := range t.piece {
		switch p.typ {
		case spUnused:
			return fmt.Errorf("%w: piece %d %s is of type UNUSED (transformers' BPE can produce it, sentencepiece's cannot)", ErrUnsupported, i, quoteClip(p.text))
		case spNormal:
			if prev >= 0 && !(p.score < t.piece[prev].score) {
				return fmt.Errorf("%w: piece %d %s has score %g, not below piece %d's %g (transformers ranks merges by id, sentencepiece by score)", ErrUnsupported, i, quoteClip(p.text), p.score, prev, t.piece[prev].score)
			}
			prev = i
		}
	}
	return nil
}

// addedDecoder checks tokenizer_config.json's added_tokens_decoder (id ->
// AddedToken) and additional_special_tokens against the model's pieces
// and passes each token to add.
func (t *SentencePiece) addedDecoder(cfg map[string]json.RawMessage, add func(string, int32)) error {
	if raw, ok := cfg["added_tokens_decoder"]; ok && string(raw) != "null" {
		var dec map[string]json.RawMessage
		if err := json.Unmarshal(raw, &dec); err != nil {
			return fmt.Errorf("%w: added_tokens_decoder: want an object, got %s", ErrFormat, briefJSON(raw))
		}
		for key, v := range dec {
			var a hfAddedToken
			var id int32
			if _, err := fmt.Sscan(key, &id); err != nil || fmt.Sprint(id) != key {
				return fmt.Errorf("%w: added_tokens_decoder: key %s is not a token id", ErrFormat, quoteClip(key))
			}
			if err := json.Unmarshal(v, &a); err != nil {
				return fmt.Errorf("%w: added_tokens_decoder[%s]: want an AddedToken object, got %s", ErrFormat, key, briefJSON(v))
			}
			switch {
			case t.pieceText(id) != a.Content:
				return fmt.Errorf("%w: added_tokens_decoder[%s] %s is not piece %s of the model (%s)", ErrUnsupported, key, quoteClip(a.Content), key, quoteClip(t.pieceText(id)))
			case a.LStrip || a.RStrip || a.SingleWord:
				return fmt.Errorf("%w: added_tokens_decoder[%s] %s sets lstrip, rstrip or single_word", ErrUnsupported, key, quoteClip(a.Content))
			case a.Normalized && strings.ContainsAny(a.Content, " ▁"):
				// TokenizersBackend matches it after Replace(" ", "▁").
				return fmt.Errorf("%w: added_tokens_decoder[%s] %s is normalized and holds a space or \"▁\"", ErrUnsupported, key, quoteClip(a.Content))
			}
			add(a.Content, id)
		}
	}
	for _, key := range []string{"additional_special_tokens", "extra_special_tokens"} {
		raw, ok := cfg[key]
		if !ok || string(raw) == "null" {
			continue
		}
		var list []json.RawMessage
		if err := json.Unmarshal(raw, &list); err != nil {
			return fmt.Errorf("%w: %s: hsdb reads a list of tokens, got %s", ErrUnsupported, key, briefJSON(raw))
		}
		for i, item := range list {
			content, _, err := tokenContent(map[string]json.RawMessage{key: item}, key)
			if err != nil {
				return fmt.Errorf("%s[%d]: %w", key, i, err)
			}
			id := int32(-1)
			for j, p := range t.piece {
				if p.text == content {
					id = int32(j)
					break
				}
			}
			if id < 0 {
				return fmt.Errorf("%w: %s[%d] %s is not a piece of the model (transformers would add it as a new token)", ErrUnsupported, key, i, quoteClip(content))
			}
			add(content, id)
		}
	}
	return nil
}

// optString reads a string field that may be absent or null ("").
func optString(cfg map[string]json.RawMessage, key string) (string, error) {
	raw, ok := cfg[key]
	if !ok || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fmt.Errorf("%w: %s: want a string, got %s", ErrFormat, key, briefJSON(raw))
	}
	return s, nil
}

// optBool reads a boolean field: absent gives absent, null gives null
// (what transformers makes of None there: add_bos_token None adds no BOS,
// add_prefix_space None means true).
func optBool(cfg map[string]json.RawMessage, key string, absent, null bool) (bool, error) {
	raw, ok := cfg[key]
	if !ok {
		return absent, nil
	}
	if string(raw) == "null" {
		return null, nil
	}
	var b bool
	if err := json.Unmarshal(raw, &b); err != nil {
		return false, fmt.Errorf("%w: %s: want true, false or null, got %s", ErrFormat, key, briefJSON(raw))
	}
	return b, nil
}

// tokenContent reads a special token field: a string or an AddedToken
// object's content; set is false when the field is absent, true with ""
// for null.
func tokenContent(cfg map[string]json.RawMessage, key string) (content string, set bool, err error) {
	raw, ok := cfg[key]
	if !ok {
		return "", false, nil
	}
	if string(raw) == "null" {
		return "", true, nil
	}
	if err := json.Unmarshal(raw, &content); err == nil {
		return content, true, nil
	}
	var obj hfAddedToken
	if err := json.Unmarshal(raw, &obj); err != nil {
		return "", true, fmt.Errorf("%w: %s: want a string or an AddedToken object, got %s", ErrFormat, key, briefJSON(raw))
	}
	if obj.LStrip || obj.RStrip || obj.SingleWord {
		return "", true, fmt.Errorf("%w: %s %s sets lstrip, rstrip or single_word", ErrUnsupported, key, quoteClip(obj.Content))
	}
	return obj.Content, true, nil
}

// encodeHF is Encode under transformers' conventions (t.hf): the special
// added tokens are cut out of text (leftmost-longest, as HF's
// AddedVocabulary), and each stretch between them, its spaces "▁", gets a
// "▁" before it where the prepend scheme says (Metaspace: unless it starts
// with "▁"; "first": only the stretch at offset 0) and goes whole through
// the BPE merges (go-sentencepiece, byte fallback). It returns an error
// wrapping ErrInvalidUTF8 for text that is not valid UTF-8 (a Python str
// cannot hold it).
func (t *SentencePiece) encodeHF(text string) ([]int32, error) {
	if !utf8.ValidString(text) {
		return nil, fmt.Errorf("%s: %w", t.name, ErrInvalidUTF8)
	}
	ids := []int32{}
	pos := 0
	for seg := range t.hf.added.segments(text) {
		if seg.err != nil {
			return nil, fmt.Errorf("%s: %w", t.name, seg.err)
		}
		start := pos
		pos += len(seg.text)
		if seg.id >= 0 {
			ids = append(ids, seg.id)
			continue
		}
		s := seg.text
		if s == "" {
			continue
		}
		if (t.hf.prepend == spPrependAlways || t.hf.prepend == spPrependFirst && start == 0) &&
			s[0] != ' ' && !strings.HasPrefix(s, "▁") {
			s = " " + s
		}
		for _, tk := range t.proc.Encode(s) { // the library writes spaces as "▁"
			ids = append(ids, int32(tk.ID))
		}
	}
	return ids, nil
}
