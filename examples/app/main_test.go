//go:build !js

package main

import (
	"io"
	"os"
	"strings"
	"testing"
)

// The program refuses what it cannot honour, before it listens.
func TestRunRefuses(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(dir+"/index.html", []byte("<!doctype html>"), 0o644)
	short := dir + "/short.key"
	os.WriteFile(short, []byte("too short"), 0o600)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-static", t.TempDir()}, "failed to find the page"},
		{[]string{"-static", dir, "-tokens", "basic"}, `Tokens is "basic"`},
		{[]string{"-static", dir, "-jwt-life", "5s"}, "-jwt-life is for -tokens jwt"},
		{[]string{"-static", dir, "-tokens", "jwt", "-jwt-life", "0s"}, "JWTLife is 0s"},
		{[]string{"-static", dir, "-session-key-file", short}, "SessionKey has 9 bytes"},
		{[]string{"-static", dir, "-session-key-file", dir + "/missing"}, "failed to read the session key"},
		{[]string{"-static", dir, "extra"}, "unexpected arguments"},
	} {
		err := run(tc.args, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("run %q: %v, want an error with %q", tc.args, err, tc.want)
		}
	}
}
