package repl

import "strconv"

// nouns counts a noun in English: "1 token", "2 tokens", "0 tokens"; one
// is the singular, and the plural adds "s" ("id" → "ids").
func nouns(n int, one string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + one + "s"
}
