package main

import (
	"encoding/json"
	"fmt"

	"hsdb/inspect/client"
)

// jsonFailure is the one object a subcommand run with --json prints on
// stdout when it fails (plan, generate, the debugger's model load), its
// flags' parsing included (helpOrError): the command, the error and the
// exit status, the keys check's, diff's and capture's failures carry too,
// so that a script reading stdout always gets one JSON object.
type jsonFailure struct {
	Command string `json:"command"`
	Error   string `json:"error"`
	Exit    int    `json:"exit"`
}

// failer returns a subcommand's fail(code, format, args...): it reports
// the message and returns code, the exit status. With *asJSON (read when
// fail is called, after the flags parsed) the message goes into one
// jsonFailure object on stdout; else to stderr as "hsdb NAME: message".
// The debugger's name is "" (command "hsdb", text "hsdb: message").
func failer(io stdio, name string, asJSON *bool) func(code int, format string, a ...any) int {
	return func(code int, format string, a ...any) int {
		msg := client.ClipMessage(fmt.Sprintf(format, a...))
		if *asJSON {
			cmd := name
			if cmd == "" {
				cmd = "hsdb"
			}
			b, _ := json.Marshal(jsonFailure{Command: cmd, Error: msg, Exit: code})
			fmt.Fprintln(io.Out, string(b))
			return code
		}
		prefix := "hsdb"
		if name != "" {
			prefix += " " + name
		}
		fmt.Fprintf(io.Err, "%s: %s\n", prefix, errText(msg))
		return code
	}
}

// errText is an error message as the command line prints it: control
// characters escaped but its own lines kept (client.PlainText: a file's
// text may hold terminal escapes), and at most client.MaxMessageBytes
// (client.ClipMessage keeps its start and its end: a tokenizer.json's
// post_processor type of 1 MB was printed whole), as the debugger prints
// one.
func errText(msg string) string { return client.PlainText(client.ClipMessage(msg)) }
