package tokenizer

import (
	"encoding/json"
	"fmt"

	"hsdb/engine/jsonerr"
	"hsdb/engine/quote"
)

// hfLead is what tokenizer.json's post_processor puts before a text's ids
// when HF encodes it with add_special_tokens=True.
type hfLead struct {
	present bool  // post_processor is not null
	id      int32 // the leading special token's id, or -1 for none
}

// hfPostProcessor is the part of a post_processor that decides a leading
// special token: TemplateProcessing's single template and special_tokens,
// Sequence's processors, and BertProcessing/RobertaProcessing's cls
// ([token, id]).
type hfPostProcessor struct {
	Type       string            `json:"type"`
	Processors []json.RawMessage `json:"processors"`
	Single     []struct {
		SpecialToken *struct {
			ID string `json:"id"`
		} `json:"SpecialToken"`
	} `json:"single"`
	SpecialTokens map[string]struct {
		IDs []int32 `json:"ids"`
	} `json:"special_tokens"`
	CLS []json.RawMessage `json:"cls"`
}

// maxLeadDepth bounds how deep parseLead reads Sequence processors nested
// in Sequence processors: tokenizers' own files nest one (a Sequence of
// ByteLevel and TemplateProcessing); each level is decoded again, so a
// file nesting 5,000 took 3.4 s.
const maxLeadDepth = 16

// parseLead reads the leading special token of tokenizer.json's
// post_processor (field names it in errors; depth is how many Sequences
// hold it): the first piece of a TemplateProcessing's single template
// when it is a SpecialToken (which must map to one id, >= 0, in
// special_tokens), BertProcessing's or RobertaProcessing's cls (an id >=
// 0), or none for ByteLevel; a Sequence takes the first of its processors
// that has one. Errors wrap ErrFormat (a template naming a special token
// it does not define, or one that is several ids; a negative id, which
// tokenizers' u32 ids cannot be) or ErrUnsupported (another processor
// type; Sequences nested deeper than maxLeadDepth). Names the file gives
// are quoted to at most 64 bytes (quoteClip).
func parseLead(raw json.RawMessage, field string, depth int) (hfLead, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return hfLead{id: -1}, nil
	}
	var p hfPostProcessor
	if err := json.Unmarshal(raw, &p); err != nil {
		return hfLead{}, fmt.Errorf("%w: %s: %v", ErrFormat, field, jsonerr.Explain(err))
	}
	lead := hfLead{present: true, id: -1}
	switch p.Type {
	case "ByteLevel":
	case "Sequence":
		if depth >= maxLeadDepth {
			return hfLead{}, fmt.Errorf("%w: %s: Sequence processors nested more than %d deep", ErrUnsupported, field, maxLeadDepth)
		}
		for i, sub := range p.Processors {
			l, err := parseLead(sub, fmt.Sprintf("%s.processors[%d]", field, i), depth+1)
			if err != nil {
				return hfLead{}, err
			}
			if l.id >= 0 {
				return l, nil
			}
		}
	case "TemplateProcessing":
		if len(p.Single) == 0 || p.Single[0].SpecialToken == nil {
			break
		}
		name := p.Single[0].SpecialToken.ID
		st, ok := p.SpecialTokens[name]
		if !ok || len(st.IDs) != 1 {
			return hfLead{}, fmt.Errorf("%w: %s.single starts with special token %s, which special_tokens does not give exactly one id", ErrFormat, field, quoteClip(name))
		}
		if st.IDs[0] < 0 {
			return hfLead{}, fmt.Errorf("%w: %s.special_tokens[%s].ids is [%d], want a token id (>= 0)", ErrFormat, field, quoteClip(name), st.IDs[0])
		}
		lead.id = st.IDs[0]
	case "BertProcessing", "RobertaProcessing":
		var id int32
		if len(p.CLS) != 2 || json.Unmarshal(p.CLS[1], &id) != nil {
			return hfLead{}, fmt.Errorf("%w: %s.cls: want [token, id]", ErrFormat, field)
		}
		if id < 0 {
			return hfLead{}, fmt.Errorf("%w: %s.cls has id %d, want a token id (>= 0)", ErrFormat, field, id)
		}
		lead.id = id
	default:
		return hfLead{}, fmt.Errorf("%w: %s type %s (ByteLevel, TemplateProcessing, BertProcessing, RobertaProcessing and Sequence are supported)", ErrUnsupported, field, quoteClip(p.Type))
	}
	return lead, nil
}

// textBOSFrom decides the id HF prepends to a text, from tokenizer.json's
// post_processor (t.lead) and tokenizer_config.json's add_bos_token and
// add_eos_token (cfg; nil without that file), as transformers' fast
// tokenizer (TokenizersBackend.__init__ and update_post_processor in
// transformers v5 tokenization_utils_tokenizers.py) does: when the config
// names add_bos_token or add_eos_token, or tokenizer.json has no
// post_processor, the post_processor is rebuilt and BOS is prepended only
// when add_bos_token is true and bos_token is set; otherwise tokenizer.
// json's post_processor decides. transformers v4's LlamaTokenizerFast
// (DeepSeek-V3's tokenizer_class, whose config says add_bos_token true and
// whose post_processor is ByteLevel only) rebuilds it from add_bos_token
// the same way.
func (t *HF) textBOSFrom(cfg map[string]json.RawMessage) (int32, error) {
	rawBOS, explicitBOS := cfg["add_bos_token"]
	_, explicitEOS := cfg["add_eos_token"]
	if !explicitBOS && !explicitEOS && t.lead.present {
		return t.lead.id, nil
	}
	add := false
	if explicitBOS && string(rawBOS) != "null" {
		if err := json.Unmarshal(rawBOS, &add); err != nil {
			return -1, fmt.Errorf("%w: add_bos_token: want true, false or null, got %s", ErrFormat, briefJSON(rawBOS))
		}
	}
	if !add {
		return -1, nil
	}
	return t.bos, nil
}

// quoteClip quotes a name a tokenizer file gives for an error message,
// its first 64 bytes and its size when longer (quote.Clip): a
// post_processor type of 1 MB made an error of 1 MB.
func quoteClip(s string) string { return quote.Clip(s, 64) }
