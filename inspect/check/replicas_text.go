package check

import "strings"

// replicaKey prefixes the replica rule's detail with the capture key whose
// copies it describes ("hidden_states.1: "), or nothing without one.
func replicaKey(k string) string {
	if k == "" {
		return ""
	}
	return k + ": "
}

// alsoFailed names the other keys whose copies differed besides worst.
func alsoFailed(failed []string, worst string) string {
	var rest []string
	for _, k := range failed {
		if k != worst {
			rest = append(rest, k)
		}
	}
	if len(rest) == 0 {
		return ""
	}
	return "; also " + strings.Join(rest, ", ")
}
