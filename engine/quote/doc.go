// Package quote quotes strings that hsdb did not write (a tokenizer file's
// names, an `input text` line, a manifest's fields, a dump directory's
// file names) for one bounded line of an error message: Go-escaped, so a
// newline or a terminal escape cannot forge a line, and cut with its size
// when long, so a string of megabytes cannot fill the screen. It imports
// only the standard library, so engine packages (tokenizer) and the front
// ends (inspect/debug, inspect/capture) share the one rule.
package quote
