package tokenizer

import (
	"encoding/json"
	"fmt"

	"hsdb/engine/jsonerr"
)

// hfLead is what tokenizer.json's post_processor puts around a text's ids
// when HF encodes it with add_special_tokens=True.
type hfLead struct {
	present bool  // post_processor is not null
	id      int32 // the leading special token's id, or -1 for none
	tail    int32 // the trailing special token's id (an EOS), or -1 for none
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
	SEP []json.RawMessage `json:"sep"`
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
		return hfLead{id: -1, tail: -1}, nil
	}
	var p hfPostProcessor
	if err := json.Unmarshal(raw, &p); err != nil {
		return hfLead{}, fmt.Errorf("%w: %s: %v", ErrFormat, field, jsonerr.Explain(err))
	}
	lead := hfLead{present: true, id: -1, tail: -1}
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
			if lead.id < 0 {
				lead.id = l.id
			}
			if lead.tail < 0 {
				lead.tail = l.tail
			}
		}
	case "TemplateProcessing":
		for i, end := range []string{"starts", "ends"} {
			k := 0
			if i == 1 {
				k = len(p.Single) - 1
			}
			if len(p.Single) == 0 || p.Single[k].SpecialToken == nil || (i == 1 && k == 0) {
				continue
			}
			name := p.Single[k].SpecialToken.ID
			st, ok := p.SpecialTokens[name]
			if !ok || len(st.IDs) != 1 {
				return hfLead{}, fmt.Errorf("%w: %s.single %s with special token %s, which special_tokens does not give exactly one id", ErrFormat, field, end, quoteClip(name))
			}
			if st.IDs[0] < 0 {
				return hfLead{}, fmt.Errorf("%w: %s.special_tokens[%s].ids is [%d], want a token id (>= 0)", ErrFormat, field, quoteClip(name), st.IDs[0])
			}
			if i == 0 {
				lead.id = st.IDs[0]
			} else {
				lead.tail = st.IDs[0]
			}
		}
	case "BertProcessing", "RobertaProcessing":
		for _, f := range []struct {
			name string
			pair []json.RawMessage
			dst  *int32
		}{{"cls", p.CLS, &lead.id}, {"sep", p.SEP, &lead.tail}} {
			var id int32
			if len(f.pair) != 2 || json.Unmarshal(f.pair[1], &id) != nil {
				return hfLead{}, fmt.Errorf("%w: %s.%s: want [token, id]", ErrFormat, field, f.name)
			}
			if id < 0 {
				return hfLead{}, fmt.Errorf("%w: %s.%s has id %d, want a token id (>= 0)", ErrFormat, field, f.name, id)
			}
			*f.dst = id
		}
	default:
		return hfLead{}, fmt.Errorf("%w: %s type %s (ByteLevel, TemplateProcessing, BertProcessing, RobertaProcessing and Sequence are supported)", ErrUnsupported, field, quoteClip(p.Type))
	}
	return lead, nil
}

// textSpecialFrom decides the ids HF puts before and after a text (bos,
// eos; -1 for none), from tokenizer.json's post_processor (t.lead) and
// tokenizer_config.json's add_bos_token and add_eos_token (cfg; nil
// without that file), as transformers' fast tokenizer
// (TokenizersBackend.__init__ and update_post_processor in transformers
// v5 tokenization_utils_tokenizers.py) does: when the config names
// add_bos_token or add_eos_token, or tokenizer.json has no
// post_processor, the post_processor is rebuilt as the single template
// "[bos:0 ]$A:0[ eos:0]": BOS is prepended only when add_bos_token is true
// and bos_token is set, EOS appended only when add_eos_token is true and
// eos_token is set; otherwise tokenizer.json's post_processor decides
// (its template's first and last special tokens, Bert/Roberta's cls and
// sep). transformers v4's LlamaTokenizerFast (DeepSeek-V3's
// tokenizer_class, whose config says add_bos_token true and whose
// post_processor is ByteLevel only) rebuilds it the same way.
func (t *HF) textSpecialFrom(cfg map[string]json.RawMessage) (bos, eos int32, err error) {
	rawBOS, explicitBOS := cfg["add_bos_token"]
	rawEOS, explicitEOS := cfg["add_eos_token"]
	if !explicitBOS && !explicitEOS && t.lead.present {
		return t.lead.id, t.lead.tail, nil
	}
	bos, eos = -1, -1
	for _, f := range []struct {
		key string
		raw json.RawMessage
		id  int32
		dst *int32
	}{{"add_bos_token", rawBOS, t.bos, &bos}, {"add_eos_token", rawEOS, t.eos, &eos}} {
		add := false
		if len(f.raw) > 0 && string(f.raw) != "null" {
			if err := json.Unmarshal(f.raw, &add); err != nil {
				return -1, -1, fmt.Errorf("%w: %s: want true, false or null, got %s", ErrFormat, f.key, briefJSON(f.raw))
			}
		}
		if add {
			*f.dst = f.id
		}
	}
	return bos, eos, nil
}
