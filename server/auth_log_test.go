//go:build !js

package server

import (
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/wsready/wsready/internal/poll"
	"github.com/wsready/wsready/protocol"
)

// A refused auth frame is logged at debug (-v) with its class, and never
// with the token: a JWT signed with another key is "bad_token", a ticket
// that does not verify "bad_ticket". The client hears the reason in the
// close (4003 "bad token").
func TestAuthRefusalsAreLoggedByClassWithoutTheToken(t *testing.T) {
	var logs logBuf
	secret := []byte("an HS256 secret of 32 bytes or more, for this test")
	f := newFixture(t, &Options{Auth: AuthRequired, IssueTickets: true, JWT: &JWTOptions{HS256Secret: secret}})
	f.srv.log = logs.logger()
	other, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"sub": "alice", "exp": time.Now().Add(time.Hour).Unix()}).
		SignedString([]byte("another secret of 32 bytes or more, not the server's"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ token, class string }{
		{other, "bad_token"},
		{"Zm9yZ2Vk.bm90LWEtdGlja2V0", "bad_ticket"},
	} {
		p := f.dial()
		p.send(protocol.Message{Type: protocol.TypeAuth, Token: tc.token})
		if code := p.closeCode(2 * time.Second); code != protocol.CloseForbidden {
			t.Fatalf("%s: closed with %d", tc.class, code)
		}
		poll.Until(2*time.Second, func() bool { return strings.Contains(logs.String(), "class=\""+tc.class) })
		out := logs.String()
		if !strings.Contains(out, "auth refused") || !strings.Contains(out, "class=\""+tc.class) {
			t.Fatalf("%s: no debug line with its class in:\n%s", tc.class, out)
		}
		for _, part := range strings.Split(tc.token, ".") {
			if strings.Contains(out, part) {
				t.Fatalf("%s: the log holds the token's bytes (%q):\n%s", tc.class, part, out)
			}
		}
	}
}
