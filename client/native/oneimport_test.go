//go:build !js

package native

import (
	"go/parser"
	"go/token"
	"strconv"
	"testing"
)

// A Go program that uses the client imports this package alone: the
// README's program (examples/readme/client) names its updates, errors and
// states through it, not through package client.
func TestTheREADMEProgramImportsOnlyThisPackage(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "../../examples/readme/client/main.go", nil, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	var ours []string
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		if len(path) > len("github.com/wsready/wsready") && path[:len("github.com/wsready/wsready")] == "github.com/wsready/wsready" {
			ours = append(ours, path)
		}
	}
	if len(ours) != 1 || ours[0] != "github.com/wsready/wsready/client/native" {
		t.Fatalf("the README program imports %v, want only github.com/wsready/wsready/client/native", ours)
	}
}
