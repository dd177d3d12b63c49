package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
	"hsdb/engine/jsonerr"
	"hsdb/engine/regfile"
	"io/fs"
	"path/filepath"
	"unicode/utf8"
)

// ErrInvalidUTF8 is returned by HF.Encode for text that is not valid UTF-8:
// HF tokenizers only accept Unicode strings, so there is no reference
// behaviour to follow, and replacing bytes would lose data silently.
var ErrInvalidUTF8 = errors.New("text is not valid UTF-8")

// HF is a byte-level BPE tokenizer read from a Hugging Face tokenizer.json
// (Qwen2/Qwen3, DeepSeek-V2/V3, Llama-3, GPT-2 style), encoding as
// huggingface/tokenizers' Tokenizer.encode(text, add_special_tokens=False)
// does: added tokens are cut out first (those with normalized=false on the
// raw text, then, after the normalizer ran on the rest, those with
// normalized=true), the remaining pieces go through the pre-tokenizer
// (Split regexes, then the ByteLevel byte-to-rune mapping) and the BPE
// model.
//
// Supported components: normalizer null/NFC/NFD/NFKC/NFKD/Sequence;
// pre_tokenizer Sequence/Split/ByteLevel with a ByteLevel step; model BPE
// (either merges format, byte_fallback, unk_token, fuse_unk, ignore_merges;
// no dropout or subword prefixes/suffixes); decoder ByteLevel. The
// post_processor (ByteLevel, TemplateProcessing, Bert/RobertaProcessing,
// Sequence) only decides TextBOS and TextEOS, since Encode adds no special tokens. Anything
// else is refused with ErrUnsupported at load time.
type HF struct {
	name           string
	normalize      hfNormalizer
	preTok         hfPreTokenizer
	model          *hfBPE
	rawAdded       *addedMatcher // normalized=false tokens, matched on raw text
	normAdded      *addedMatcher // normalized=true tokens, matched after normalizing
	idToToken      []string      // [VocabSize] token strings ("" for holes)
	addedID        map[int32]bool
	addedByContent map[string]int32
	bos, eos       int32
	lead           hfLead // what post_processor puts before a text's ids
	textBOS        int32  // the id HF prepends to a text, or -1 (TextBOS)
	textEOS        int32  // the id HF appends to a text, or -1 (TextEOS)
	vocabSize      int
	specialIDs     map[int32]bool
	// keepsText: the pre-tokenizer keeps every byte (preTokDrops), so a
	// segment of n bytes becomes words of at least n characters.
	keepsText bool
}

type hfFileJSON struct {
	AddedTokens   []hfAddedToken  `json:"added_tokens"`
	Normalizer    json.RawMessage `json:"normalizer"`
	PreTokenizer  json.RawMessage `json:"pre_tokenizer"`
	Model         json.RawMessage `json:"model"`
	Decoder       json.RawMessage `json:"decoder"`
	PostProcessor json.RawMessage `json:"post_processor"`
}

// LoadHF reads a tokenizer.json. When a tokenizer_config.json lies in the
// same directory, its bos_token and eos_token (a string or an AddedToken
// object, as transformers writes them) give BOS and EOS; otherwise both are
// -1. Errors wrap ErrFormat (bad JSON, a merge or special token missing from
// the vocabulary, ...) or ErrUnsupported (a component type this package
// does not implement), naming the file and the JSON field.
func LoadHF(path string) (*HF, error) {
	data, err := regfile.ReadFile(path, MaxFileBytes)
	if err != nil {
		return nil, fmt.Errorf("hf tokenizer: %w", err)
	}
	t, err := parseHF(data, filepath.Base(path))
	if err != nil {
		return nil, fmt.Errorf("hf tokenizer %s: %w", path, err)
	}
	cfgPath := filepath.Join(filepath.Dir(path), "tokenizer_config.json")
	cfg, err := regfile.ReadFile(cfgPath, MaxFileBytes)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("hf tokenizer: %w", err)
	default:
		if err := t.readConfig(cfg); err != nil {
			return nil, fmt.Errorf("hf tokenizer %s: %w", cfgPath, err)
		}
	}
	return t, nil
}

func parseHF(data []byte, base string) (*HF, error) {
	if err := jsonerr.CheckSurrogates(data); err != nil { // encoding/json would decode it to U+FFFD
		return nil, fmt.Errorf("%w: %v", ErrFormat, err)
	}
	var f hfFileJSON
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrFormat, jsonerr.Explain(err))
	}
	t := &HF{name: "hf:" + base, bos: -1, eos: -1, textBOS: -1, textEOS: -1, addedID: map[int32]bool{}, addedByContent: map[string]int32{}, specialIDs: map[int32]bool{}}
	var err error
	if t.normalize, err = newHFNormalizer(f.Normalizer, "normalizer", 0); err != nil {
		return nil, err
	}
	var byteLevel bool
	if t.preTok, byteLevel, err = newHFPreTokenizer(f.PreTokenizer, "pre_tokenizer", 0); err != nil {
		return nil, err
	}
	if !byteLevel {
		return nil, fmt.Errorf("%w: pre_tokenizer has no ByteLevel step (only byte-level BPE is supported)", ErrUnsupported)
	}
	t.keepsText = !preTokDrops(f.PreTokenizer)
	if t.model, err = newHFBPE(f.Model); err != nil {
		return nil, err
	}
	var dec hfComponent
	if len(f.Decoder) == 0 || string(f.Decoder) == "null" {
		return nil, fmt.Errorf("%w: decoder is null (only ByteLevel is supported)", ErrUnsupported)
	}
	if err := json.Unmarshal(f.Decoder, &dec); err != nil {
		return nil, fmt.Errorf("%w: decoder: %v", ErrFormat, jsonerr.Explain(err))
	}
	if dec.Type != "ByteLevel" {
		return nil, fmt.Errorf("%w: decoder type %s (only ByteLevel is supported)", ErrUnsupported, quoteClip(dec.Type))
	}

	maxID := int32(-1)
	for tok, id := range t.model.vocab {
		if id > MaxTokenID {
			return nil, fmt.Errorf("%w: model.vocab[%s] = %d, more than the largest token id hsdb reads (%d)", ErrFormat, quoteClip(tok), id, MaxTokenID)
		}
		maxID = max(maxID, id)
	}
	var rawPats, normPats []string
	var rawToks, normToks []*hfAddedToken
	for i := range f.AddedTokens {
		a := &f.AddedTokens[i]
		if err := checkAddedEntry(i, a); err != nil {
			return nil, err
		}
		if a.ID > MaxTokenID {
			return nil, fmt.Errorf("%w: added_tokens[%d] %s: id %d, more than the largest token id hsdb reads (%d)", ErrFormat, i, quoteClip(a.Content), a.ID, MaxTokenID)
		}
		maxID = max(maxID, a.ID)
		t.addedID[a.ID] = true
		t.addedByContent[a.Content] = a.ID
		if a.Special {
			t.specialIDs[a.ID] = true
		}
		if a.Normalized {
			p := a.Content
			if t.normalize != nil {
				p = t.normalize(p)
			}
			normPats, normToks = append(normPats, p), append(normToks, a)
		} else {
			rawPats, rawToks = append(rawPats, a.Content), append(rawToks, a)
		}
	}
	if t.rawAdded, err = newAddedMatcher(rawPats, rawToks); err != nil {
		return nil, fmt.Errorf("added_tokens (normalized false): %w", err)
	}
	if t.normAdded, err = newAddedMatcher(normPats, normToks); err != nil {
		return nil, fmt.Errorf("added_tokens (normalized true): %w", err)
	}
	t.vocabSize = int(maxID) + 1
	if t.idToToken, err = idTable(t.vocabSize, t.model.vocab, f.AddedTokens); err != nil {
		return nil, err
	}
	if t.lead, err = parseLead(f.PostProcessor, "post_processor", 0); err != nil {
		return nil, err
	}
	if t.lead.id >= int32(t.vocabSize) {
		return nil, fmt.Errorf("%w: post_processor prepends id %d, beyond the vocabulary (%d ids)", ErrFormat, t.lead.id, t.vocabSize)
	}
	if t.lead.tail >= int32(t.vocabSize) {
		return nil, fmt.Errorf("%w: post_processor appends id %d, beyond the vocabulary (%d ids)", ErrFormat, t.lead.tail, t.vocabSize)
	}
	if t.textBOS, t.textEOS, err = t.textSpecialFrom(nil); err != nil { // no tokenizer_config.json
		return nil, err
	}
	return t, nil
}

// idTable returns the token string of each id below size: model.vocab's,
// then added_tokens' (an added token that repeats a vocabulary entry with
// the same id, as DeepSeek-V3's file does, is the same string). Each id
// must name one string, or Decode would be ambiguous: two model.vocab
// entries with one id, an added token whose id model.vocab gives to
// another string, or two added tokens with one id and different contents
// are ErrFormat naming the id and both strings (huggingface/tokenizers
// keeps one of them silently). Each string must have one id, or text
// would encode to one id while TokenID gave another: an added token whose
// content model.vocab or an earlier added token gives another id is
// ErrFormat naming the string and both ids (huggingface/tokenizers gives
// it the id it already has, warning that the file expected another).
func idTable(size int, vocab map[string]int32, added []hfAddedToken) ([]string, error) {
	tab := make([]string, size)
	inVocab := make([]bool, size)
	for tok, id := range vocab {
		if inVocab[id] {
			a, b := min(tab[id], tok), max(tab[id], tok) // map order varies: name them sorted
			return nil, fmt.Errorf("%w: id %d is given to both %s and %s in model.vocab", ErrFormat, id, quoteClip(a), quoteClip(b))
		}
		tab[id], inVocab[id] = tok, true
	}
	byAdded := map[int32]int{}    // id -> index of the first added token with it
	byContent := map[string]int{} // content -> index of the first added token with it
	for i, a := range added {
		if id, ok := vocab[a.Content]; ok && id != a.ID {
			return nil, fmt.Errorf("%w: added_tokens[%d] %s has id %d, but model.vocab gives %s id %d", ErrFormat, i, quoteClip(a.Content), a.ID, quoteClip(a.Content), id)
		}
		if j, ok := byContent[a.Content]; ok && added[j].ID != a.ID {
			return nil, fmt.Errorf("%w: added_tokens[%d] %s has id %d, but added_tokens[%d] gives %s id %d", ErrFormat, i, quoteClip(a.Content), a.ID, j, quoteClip(a.Content), added[j].ID)
		} else if !ok {
			byContent[a.Content] = i
		}
		if inVocab[a.ID] && tab[a.ID] != a.Content {
			return nil, fmt.Errorf("%w: added_tokens[%d] %s has id %d, which model.vocab gives to %s", ErrFormat, i, quoteClip(a.Content), a.ID, quoteClip(tab[a.ID]))
		}
		if j, ok := byAdded[a.ID]; ok && added[j].Content != a.Content {
			return nil, fmt.Errorf("%w: added_tokens[%d] %s has id %d, which added_tokens[%d] gives to %s", ErrFormat, i, quoteClip(a.Content), a.ID, j, quoteClip(added[j].Content))
		} else if !ok {
			byAdded[a.ID] = i
		}
		tab[a.ID] = a.Content
	}
	return tab, nil
}

// readConfig takes bos_token and eos_token from tokenizer_config.json, and
// with add_bos_token and add_eos_token decides TextBOS and TextEOS
// (textSpecialFrom).
func (t *HF) readConfig(data []byte) error {
	if err := jsonerr.CheckSurrogates(data); err != nil {
		return fmt.Errorf("%w: %v", ErrFormat, err)
	}
	var cfg map[string]json.RawMessage
	if err := json.Unmarshal(data, &cfg); err != nil {
		return fmt.Errorf("%w: %v", ErrFormat, jsonerr.Explain(err))
	}
	for _, f := range []struct {
		key string
		dst *int32
	}{{"bos_token", &t.bos}, {"eos_token", &t.eos}} {
		raw, ok := cfg[f.key]
		if !ok || string(raw) == "null" {
			continue
		}
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			var obj struct {
				Content string `json:"content"`
			}
			if err := json.Unmarshal(raw, &obj); err != nil {
				return fmt.Errorf("%w: %s: want a string or an AddedToken object, got %s", ErrFormat, f.key, briefJSON(raw))
			}
			s = obj.Content
		}
		id, ok := t.TokenID(s)
		if !ok {
			return fmt.Errorf("%w: %s %s is not a token of %s", ErrFormat, f.key, quoteClip(s), t.name)
		}
		*f.dst = id
	}
	var err error
	t.textBOS, t.textEOS, err = t.textSpecialFrom(cfg)
	return err
}

// TokenID returns the id of a token string (an added token's content or a
// vocabulary entry in the byte-level alphabet, e.g. "Ġthe").
func (t *HF) TokenID(tok string) (int32, bool) {
	if id, ok := t.addedByContent[tok]; ok {
		return id, true
	}
	id, ok := t.model.vocab[tok]
	return id, ok
}

// Name returns "hf:" and the file's base name.
func (t *HF) Name() string { return t.name }

// VocabSize is the largest id of the vocabulary and the added tokens plus
// one (151669 for Qwen3, like HF's get_vocab_size(with_added_tokens=True)
// when ids have no holes).
func (t *HF) VocabSize() int { return t.vocabSize }

// BOS is the id of tokenizer_config.json's bos_token, or -1.
func (t *HF) BOS() int32 { return t.bos }

// TextBOS is the id HF transformers prepends to a text it encodes with
// add_special_tokens=True, or -1 for none: tokenizer.json's post_processor
// decides unless tokenizer_config.json names add_bos_token or
// add_eos_token, which then decide (textSpecialFrom gives the rule and its
// source). It differs from BOS where a model has a bos_token that is not
// added to texts (add_bos_token false).
func (t *HF) TextBOS() int32 { return t.textBOS }

// TextEOS is the id HF transformers appends to a text it encodes with
// add_special_tokens=True, or -1 for none: tokenizer_config.json's
// add_eos_token true, or tokenizer.json's post_processor template ending
// with a special token (BertProcessing's sep) where the config names
// neither add_bos_token nor add_eos_token (textSpecialFrom).
func (t *HF) TextEOS() int32 { return t.textEOS }

// EOS is the id of tokenizer_config.json's eos_token, or -1.
func (t *HF) EOS() int32 { return t.eos }

// Encode returns HF tokenizers' ids for text with add_special_tokens=False
// (added tokens appearing in the text, special or not, are still matched,
// as in HF). It returns an error wrapping ErrInvalidUTF8 for invalid UTF-8.
func (t *HF) Encode(text string) ([]int32, error) {
	return t.EncodeMax(text, -1)
}

// EncodeMax is Encode that stops once the ids number more than max (max <
// 0: no bound), returning an error wrapping ErrTooManyTokens: before the
// pre-tokenized word that cannot fit (hfBPE.minTokens), so no word is
// merged past the bound.
func (t *HF) EncodeMax(text string, max int) ([]int32, error) {
	if !utf8.ValidString(text) {
		return nil, fmt.Errorf("%s: %w", t.name, ErrInvalidUTF8)
	}
	ids := make([]int32, 0, capHint(len(text), max))
	for seg := range t.rawAdded.segments(text) {
		if max >= 0 && len(ids) > max {
			return nil, tooMany(t.name, max, len(text))
		}
		if seg.err != nil {
			return nil, fmt.Errorf("%s: %w", t.name, seg.err)
		}
		if seg.id >= 0 {
			ids = append(ids, seg.id)
			continue
		}
		if seg.text == "" {
			continue
		}
		s := seg.text
		if t.normalize != nil {
			s = t.normalize(s)
		}
		for seg2 := range t.normAdded.segments(s) {
			if seg2.err != nil {
				return nil, fmt.Errorf("%s: %w", t.name, seg2.err)
			}
			if seg2.id >= 0 {
				ids = append(ids, seg2.id)
				continue
			}
			if seg2.text == "" {
				continue
			}
			// A segment that cannot fit is refused before it is
			// pre-tokenized (15 MB of "a1! \n" took 13 s to split into
			// words): its n bytes become words of n characters or more.
			if max >= 0 && t.keepsText && len(ids)+t.model.minTokensOf(len(seg2.text)) > max {
				return nil, tooMany(t.name, max, len(text))
			}
			words, err := t.preTok([]string{seg2.text})
			if err != nil {
				return nil, fmt.Errorf("%s: %w", t.name, err)
			}
			for _, w := range words {
				// A word that cannot fit is refused before its merges (one
				// word of 16 MB of "a" took 11 s to merge).
				if max >= 0 && len(ids)+t.model.minTokens(w) > max {
					return nil, tooMany(t.name, max, len(text))
				}
				ids = t.model.tokenize(ids, w)
			}
		}
	}
	if max >= 0 && len(ids) > max {
		return nil, tooMany(t.name, max, len(text))
	}
	return ids, nil
}

// DecodePiece returns the raw bytes of id (prev is not used: byte-level BPE
// keeps spaces inside tokens): a vocabulary token mapped back through the
// byte-level alphabet, an added token's content as is. A token may hold an
// incomplete UTF-8 sequence. Ids out of range give "".
func (t *HF) DecodePiece(prev, id int32) string {
	if id < 0 || int(id) >= len(t.idToToken) {
		return ""
	}
	return string(byteLevelDecode(t.idToToken[id]))
}

// Decode is HF tokenizers' decode(ids, skip_special_tokens=False) with the
// ByteLevel decoder: the bytes of all tokens, turned into a string with
// each maximal invalid UTF-8 subsequence replaced by U+FFFD (Rust's
// String::from_utf8_lossy). Unknown ids are skipped, as in HF.
func (t *HF) Decode(ids []int32) string {
	var b []byte
	for _, id := range ids {
		if id < 0 || int(id) >= len(t.idToToken) || (t.idToToken[id] == "" && !t.addedID[id]) {
			continue
		}
		b = append(b, byteLevelDecode(t.idToToken[id])...)
	}
	return lossyUTF8(b)
}

// IsSpecial reports whether id is an added token marked special (e.g.
// Qwen3's <|im_start|>), which callers may hide from output.
func (t *HF) IsSpecial(id int32) bool { return t.specialIDs[id] }
