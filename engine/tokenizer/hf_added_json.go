package tokenizer

import (
	"encoding/json"
	"fmt"
)

// UnmarshalJSON decodes one AddedToken object as encoding/json would,
// noting whether "id" and "content" were given (hasID, hasContent), so
// that an entry without them is refused as such (checkAddedEntry) rather
// than read as id 0 or an empty content.
func (a *hfAddedToken) UnmarshalJSON(b []byte) error {
	type plain hfAddedToken // without the method: no recursion
	var v struct {
		plain
		ID      *int32  `json:"id"`
		Content *string `json:"content"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*a = hfAddedToken(v.plain)
	if v.ID != nil {
		a.ID, a.hasID = *v.ID, true
	}
	if v.Content != nil {
		a.Content, a.hasContent = *v.Content, true
	}
	return nil
}

// checkAddedEntry refuses added_tokens[i] without an id or a content
// (HF tokenizers: serde's missing field), with an empty content (nothing
// to match in text) or a negative id (HF reads ids as u32), naming the
// entry and what is wrong with it.
func checkAddedEntry(i int, a *hfAddedToken) error {
	switch {
	case !a.hasContent:
		return fmt.Errorf("%w: added_tokens[%d] (id %d) has no content: want the token's text", ErrFormat, i, a.ID)
	case a.Content == "":
		return fmt.Errorf("%w: added_tokens[%d] (id %d) has an empty content: there is no text to match", ErrFormat, i, a.ID)
	case !a.hasID:
		return fmt.Errorf("%w: added_tokens[%d] %s has no id: want the token's id, 0 to %d", ErrFormat, i, quoteClip(a.Content), MaxTokenID)
	case a.ID < 0:
		return fmt.Errorf("%w: added_tokens[%d] %s: id %d is negative: want 0 to %d", ErrFormat, i, quoteClip(a.Content), a.ID, MaxTokenID)
	}
	return nil
}
