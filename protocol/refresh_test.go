//go:build !js

package protocol

import (
	"errors"
	"strings"
	"testing"
)

// A refresh frame carries its token as an auth frame does, under the same
// bound, and round-trips through both decoders.
func TestRefreshFrame(t *testing.T) {
	m := Message{Type: TypeRefresh, Token: "tok.en"}
	b := Encode(m)
	if string(b) != `{"type":"refresh","token":"tok.en"}` {
		t.Fatalf("encoded %s", b)
	}
	for name, dec := range map[string]func([]byte) (Message, error){"Decode": Decode, "DecodeJSON": DecodeJSON} {
		got, err := dec(b)
		if err != nil || got.Type != TypeRefresh || got.Token != "tok.en" {
			t.Fatalf("%s: %+v, %v", name, got, err)
		}
		for _, bad := range []string{`{"type":"refresh"}`, `{"type":"refresh","token":""}`, `{"type":"refresh","token":"` + strings.Repeat("a", MaxTokenBytes+1) + `"}`} {
			_, err := dec([]byte(bad))
			var de *DecodeError
			if !errors.As(err, &de) || de.Field != "token" {
				t.Fatalf("%s(%.40s...): %v, want a refusal of its token", name, bad, err)
			}
		}
	}
}
