// Package tokenizer turns text into the token ids a model consumes (hsdb's
// `input text "..."`) and ids back into text (`hsdb generate`). Every
// tokenizer implements the Tokenizer interface; four loaders exist:
//
//   - LoadLlama2C: llama2.c's tokenizer.bin (stories260K's tok512.bin),
//     encoding and decoding exactly as karpathy/llama2.c run.c's encode()
//     and decode().
//   - LoadSentencePiece: a SentencePiece BPE .model (tok512.model, Llama-2's
//     tokenizer.model), encoding like the sentencepiece library.
//     LoadSentencePieceDir: the same file with a tokenizer_config.json
//     beside it, encoding and adding BOS/EOS as HF transformers 5.17's
//     AutoTokenizer does for a directory without tokenizer.json
//     (LlamaTokenizer or TokenizersBackend, chosen as transformers
//     chooses; add_bos_token and add_eos_token default to false).
//   - LoadHF: a Hugging Face tokenizer.json with byte-level BPE (Qwen2/3,
//     DeepSeek-V2/V3, Llama-3), encoding like huggingface/tokenizers with
//     add_special_tokens=False.
//   - LoadKimi: Kimi-K2 / Kimi-K2.5's tiktoken.model with the special
//     tokens of its tokenizer_config.json, encoding like Kimi's
//     TikTokenTokenizer.encode (OpenAI tiktoken with Kimi's pattern, special
//     tokens in the text allowed); NewTiktoken builds the same type from any
//     tiktoken rank file with one of the known patterns.
//
// Encode never adds BOS or EOS; callers prepend TextBOS(t) and append
// TextEOS(t) themselves (the BOS a text starts with by the tokenizer's
// reference: BOS(), or what an HF tokenizer.json's post_processor and
// add_bos_token say, or for a SentencePiece model with a
// tokenizer_config.json add_bos_token; the EOS it ends with: none, or what
// the post_processor and add_eos_token say). Loaders
// refuse (ErrUnsupported) any file feature they do not implement instead of
// producing ids that silently differ from the reference; malformed files
// give ErrFormat with the file name and the token index or JSON field.
//
// # Libraries, and why
//
// SentencePiece: github.com/eliben/go-sentencepiece v0.7.0 runs the BPE
// merges. It implements no normalizer options and, on models that leave
// add_dummy_prefix / remove_extra_whitespaces at their proto defaults (as
// tok512.model does), dereferences a nil pointer; this package parses the
// ModelProto itself (google.golang.org/protobuf/encoding/protowire), hands
// the library a copy with both options set to false, and applies
// SentencePiece's identity-rule normalizer (normalizer.cc: dummy prefix,
// removal of extra spaces, U+FFFD for malformed UTF-8) and decoder rules
// itself.
//
// HF tokenizer.json: both pure-Go candidates were run on the real Qwen3 and
// DeepSeek-V3 files over testdata/strings.txt (319 strings) and compared
// with transformers.js (@lenml/tokenizers 3.7.2):
//
//   - github.com/sugarme/tokenizer v0.3.0 panics while loading either file:
//     it compiles their Split regex with regexp.MustCompile, and Go's regexp
//     has no look-ahead (`\s+(?!\S)`).
//   - github.com/gomlx/go-huggingface v0.4.0, package
//     tokenizers/hftokenizer (v0.3.1, the proxy's @latest, has no
//     tokenizer.json support): it loads, but a Split regex that Go's regexp
//     cannot compile silently becomes "the whole text is one word", and
//     ByteLevel ignores use_regex, so 19 of 319 Qwen3 strings and 14 of 319
//     DeepSeek-V3 strings get wrong ids — every run of whitespace (Qwen3
//     "hello   world" gives [14990 220 220 1879], HF [14990 256 1879]).
//   - github.com/daulet/tokenizers wraps the Rust library through cgo and
//     is excluded.
//
// As no library matches HF, the byte-level BPE pipeline is implemented here
// (hf*.go, following tokenizers/src: added_vocabulary.rs, normalizer.rs
// split, pre_tokenizers/byte_level.rs, models/bpe), with two well-kept
// libraries for the parts that are not BPE: github.com/dlclark/regexp2
// (pure Go, .NET syntax with look-around and Unicode classes, standing in
// for HF's Oniguruma) for Split patterns, and golang.org/x/text/unicode/norm
// for NFC/NFKC. It agrees with transformers.js on 319/319 strings for both
// files; testdata/<name>.expected.json, written by
// scripts/tokenizer_reference.py from HF tokenizers and sentencepiece, is
// the authoritative check (TestReferenceHF, TestReferenceSentencePiece).
// Regex anchors (^, $), whose meaning differs between Oniguruma and
// regexp2, are refused. Character classes use Go's Unicode 15.0 tables;
// characters assigned after Unicode 15.0 may classify differently from HF.
//
// Added tokens (HF's added_tokens, tiktoken's special tokens, SentencePiece
// control and user-defined pieces) are found leftmost-longest, as HF's
// AddedVocabulary does with the aho-corasick crate's
// MatchKind::LeftmostLongest, by an Aho-Corasick automaton written here
// (ahocorasick.go): matching text against a tokenizer's own tokens is part
// of what this package exists for, and its cost must stay linear in the
// text and the tokens for any file (a hostile tokenizer.json of 254 added
// tokens of 20 KB made the matcher it replaced take 17.6 s on 1 M
// characters). Added tokens totalling more than 16 MiB are refused
// (ErrUnsupported) to bound the automaton's memory.
//
// tiktoken: no Go library runs tiktoken's patterns exactly (they need
// look-ahead, Kimi's needs class intersection `&&`, cl100k's possessive
// quantifiers; regexp2 has neither `&&` nor possessives), so the patterns
// are matched by hand-written code (tiktoken_split.go) that returns what a
// backtracking engine returns, and byte pairs are merged by bpe_merge.go.
// testdata/tiktoken.expected.json, written by scripts/tiktoken_reference.py
// with OpenAI tiktoken 0.14.0, is the check: 420 strings under six
// (rank file, pattern) runs, including Kimi's layout and text cutting
// (TestTiktokenReference), and the token count of the 1 MiB joined text
// (TestTiktokenJoinedText).
//
// # Where encodings legitimately differ
//
// tok512.bin (llama2.c) and tok512.model (SentencePiece) hold the same 512
// pieces and scores, and the two tokenizers give the same ids except on
// 24 of the 319 test strings, all for one reason: SentencePiece normalizes
// spaces and run.c does not. With remove_extra_whitespaces (on in
// tok512.model) SentencePiece drops leading and trailing spaces and
// collapses runs of spaces ("hello  world": SentencePiece [281 306 414 263
// 304 341], run.c [281 306 414 410 263 304 341]; "   ": [] and
// [410 410 410 410]); and it treats a literal "▁" (U+2581) as a space, which
// run.c byte-falls back as E2 96 81. SentencePiece proper (sentencepiece
// 0.1.97) agrees with this package's SentencePiece type on all 319 strings,
// and run.c's ids for the SentencePiece-normalized string equal
// SentencePiece's (TestSentencePieceMatchesLlama2C). Tabs, newlines and
// other whitespace are left alone by both. A NUL byte ends run.c's C string;
// here it is encoded as <0x00>, as SentencePiece does.
//
// This package must not import other hsdb packages (engine backends,
// inspect, repl, kernels) nor use cgo: it is leaf code that repl/ and the
// generate command call with plain strings and []int32.
package tokenizer
