package capture

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"strings"
	"testing"
)

// TestRuleNamesFitColumn: check, capture and dump print rule names padded
// to RuleWidth ("  pass  structure         ..."); "no injected faults"
// (18 characters) overflowed the 16-character column and pushed its
// detail out of line. Every Rule* constant of rules.go, read from the
// source so that a new rule is covered too, must fit.
func TestRuleNamesFitColumn(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "rules.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				if !strings.HasPrefix(name.Name, "Rule") || name.Name == "RuleWidth" || i >= len(vs.Values) {
					continue
				}
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					continue
				}
				s, _ := strconv.Unquote(lit.Value)
				n++
				if len(s) > RuleWidth {
					t.Errorf("%s = %q: %d characters, more than the column's %d", name.Name, s, len(s), RuleWidth)
				}
			}
		}
	}
	if n < 19 { // 13 file rules, 6 of a dump directory or its validation
		t.Fatalf("found %d rule names in rules.go, want at least 19", n)
	}
}
