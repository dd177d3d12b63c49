package tokenizer

// The GPT-2 byte-level alphabet (openai/gpt-2 encoder.py bytes_to_unicode,
// mirrored by HF tokenizers' pre_tokenizers/byte_level.rs): every byte maps
// to a printable rune so that byte-level BPE vocabularies are plain strings.
// Printable Latin-1 bytes ('!'..'~', '¡'..'¬', '®'..'ÿ') map to themselves;
// the other 68 bytes map, in increasing byte order, to U+0100, U+0101, ...
// (so ' ' is 'Ġ' U+0120 and '\n' is 'Ċ' U+010A).
var (
	byteToRune [256]rune
	runeToByte = map[rune]byte{}
)

func init() {
	n := 0
	for b := 0; b < 256; b++ {
		printable := (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF)
		r := rune(b)
		if !printable {
			r = rune(256 + n)
			n++
		}
		byteToRune[b] = r
		runeToByte[r] = byte(b)
	}
}

// byteLevelEncode maps every byte of s to its byte-level rune.
func byteLevelEncode(s string) string {
	out := make([]rune, len(s))
	for i := 0; i < len(s); i++ {
		out[i] = byteToRune[s[i]]
	}
	return string(out)
}

// byteLevelDecode maps a token back to bytes as HF's ByteLevel decoder does:
// if every rune of tok is in the byte-level alphabet, the bytes they stand
// for; otherwise (an added token such as "<｜User｜>") tok's own bytes.
func byteLevelDecode(tok string) []byte {
	out := make([]byte, 0, len(tok))
	for _, r := range tok {
		b, ok := runeToByte[r]
		if !ok {
			return []byte(tok)
		}
		out = append(out, b)
	}
	return out
}
