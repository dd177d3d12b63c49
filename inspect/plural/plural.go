// Package plural counts nouns in the messages hsdb prints: "1 token", "2
// tokens". It imports nothing of hsdb, so that every package that words a
// message (engine excluded) can use it.
package plural

import "strconv"

// N is n followed by the noun one, made plural by adding "s" unless n is 1:
// N(1, "token") = "1 token", N(0, "token") = "0 tokens", N(2, "id") = "2
// ids". A noun whose plural is not one+"s" takes Of.
func N(n int, one string) string {
	return Of(n, one, one+"s")
}

// Of is n followed by one when n is 1, else by many: Of(1, "entry",
// "entries") = "1 entry", Of(3, "entry", "entries") = "3 entries".
func Of(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// S is the noun's ending for a count n: "" when n is 1, else "s"
// ("token" + S(n)), for a count printed apart from its noun.
func S(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
