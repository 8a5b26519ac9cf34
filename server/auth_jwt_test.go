//go:build !js

package server

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/golang-jwt/jwt/v5"
	"github.com/wsready/wsready/protocol"
)

var hsSecret = []byte("an HS256 secret of 32 bytes or more, for tests")

// signJWT signs claims with method and key; kid, if set, goes in the header.
func signJWT(t *testing.T, method jwt.SigningMethod, key any, kid string, claims jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(method, claims)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// claimsFor are good claims for user, living life.
func claimsFor(user string, life time.Duration) jwt.MapClaims {
	return jwt.MapClaims{"sub": user, "exp": time.Now().Add(life).Unix(), "iss": "idp", "aud": "wsready", "org": "acme"}
}

// authWith dials f, sends tok and returns the peer and how it went: the
// authenticated frame, or the close.
func (f *fixture) authWith(tok string) (*peer, protocol.Message, websocket.CloseError) {
	f.t.Helper()
	p := f.dial()
	p.send(protocol.Message{Type: protocol.TypeAuth, Token: tok})
	deadline := time.After(2 * time.Second)
	for {
		select {
		case m := <-p.frames:
			if m.Type == protocol.TypeAuthenticated {
				return p, m, websocket.CloseError{}
			}
		case err := <-p.closed:
			p.closed <- err // for Cleanup
			var ce websocket.CloseError
			if !errors.As(err, &ce) {
				f.t.Fatalf("closed without a close frame: %v", err)
			}
			return p, protocol.Message{}, ce
		case <-deadline:
			f.t.Fatal("neither authenticated nor closed within 2s")
		}
	}
}

func rsaKey(t *testing.T, bits int) *rsa.PrivateKey {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, bits)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func ecKey(t *testing.T, c elliptic.Curve) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(c, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func pemOf(t *testing.T, pub any) []byte {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

// A JWT from the application's identity provider authenticates as a ticket
// does: sub is the user, the tenant claim the tenant, other string claims
// the claims; exp drives the same 4001 close; an expired one that verified
// is counted against its user.
func TestJWTGivesTheConnectionItsIdentityAndExpires(t *testing.T) {
	var mu sync.Mutex
	var seen []Identity
	f := newFixture(t, &Options{Demo: true, JWT: &JWTOptions{HS256Secret: hsSecret, TenantClaim: "org", Issuer: "idp", Audience: "wsready"},
		Authorize: func(_ context.Context, id Identity, a Action) error {
			mu.Lock()
			seen = append(seen, id)
			mu.Unlock()
			return nil
		}})
	if f.srv.opts.Auth != AuthRequired {
		t.Fatalf("Auth %q with JWT, want required by default", f.srv.opts.Auth)
	}
	claims := claimsFor("alice", 2*time.Second)
	claims["role"] = "admin"
	claims["n"] = 7 // not a string: not a claim
	exp := time.Unix(claims["exp"].(int64), 0)
	p := f.dial()
	p.send(protocol.Message{Type: protocol.TypeAuth, Token: signJWT(t, jwt.SigningMethodHS256, hsSecret, "", claims)})
	if w := p.next(protocol.TypeWelcome, time.Second); w.User != "alice" {
		t.Fatalf("welcome %+v", w)
	}
	if a := p.next(protocol.TypeAuthenticated, time.Second); a.ExpiresAt != exp.UnixMilli() {
		t.Fatalf("authenticated %+v, want expiresAt %d", a, exp.UnixMilli())
	}
	p.send(protocol.Message{Type: protocol.TypeSubscribe, Topic: "room"})
	p.next(protocol.TypeSubscribed, time.Second)
	mu.Lock()
	got := seen
	mu.Unlock()
	want := Identity{User: "alice", Tenant: "acme", Claims: map[string]string{"role": "admin"}}
	if len(got) != 1 || !reflect.DeepEqual(got[0], want) {
		t.Fatalf("Authorize saw %+v, want %+v", got, want)
	}
	if code := p.closeCode(4 * time.Second); code != protocol.CloseTokenExpired {
		t.Fatalf("at exp: closed with %d", code)
	}
	if late := time.Since(exp); late < -50*time.Millisecond || late > time.Second {
		t.Fatalf("closed %v after exp", late)
	}
	// An expired token that verified: 4001 at once, against its user.
	_, _, ce := f.authWith(signJWT(t, jwt.SigningMethodHS256, hsSecret, "", claimsFor("bob", -time.Minute)))
	if ce.Code != protocol.CloseTokenExpired {
		t.Fatalf("expired JWT: %v", ce)
	}
	if st := f.srv.Stats().Auth; st.RejectionsByID["bob"] != 1 || st.TrackedAddrs != 0 || st.Accepted != 1 {
		t.Fatalf("auth stats %+v", st)
	}
	// Leeway: a token 10 s past its exp is good for 20 s more with 30 s.
	l := newFixture(t, &Options{JWT: &JWTOptions{HS256Secret: hsSecret, Leeway: 30 * time.Second}})
	late := claimsFor("carol", -10*time.Second)
	if _, a, ce := l.authWith(signJWT(t, jwt.SigningMethodHS256, hsSecret, "", late)); a.ExpiresAt != (late["exp"].(int64)+30)*1000 {
		t.Fatalf("with leeway: authenticated %+v, close %v; want expiresAt exp+30s", a, ce)
	}
	// Tickets still work beside JWTs.
	tok, _ := f.token(t, "page-1")
	if _, a, ce := f.authWith(tok); a.Type != protocol.TypeAuthenticated {
		t.Fatalf("a ticket with JWT on: %v", ce)
	}
}

// A JWT that does not verify, or verifies but is not for us, is a bad
// token: 4003, counted against the address, never the sub it names, whose
// valid token still gets in.
func TestBadJWTsAreRefusedPerAddress(t *testing.T) {
	f := newFixture(t, &Options{Demo: true, BadTicketThreshold: 100,
		JWT: &JWTOptions{HS256Secret: hsSecret, TenantClaim: "org", Issuer: "idp", Audience: "wsready"}})
	good := func() jwt.MapClaims { return claimsFor("victim", time.Minute) }
	with := func(k string, v any) jwt.MapClaims {
		c := good()
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
		return c
	}
	hs := func(c jwt.MapClaims) string { return signJWT(t, jwt.SigningMethodHS256, hsSecret, "", c) }
	none, err := jwt.NewWithClaims(jwt.SigningMethodNone, good()).SignedString(jwt.UnsafeAllowNoneSignatureType)
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(hs(good()), ".")
	bad := map[string]string{
		"another secret":   signJWT(t, jwt.SigningMethodHS256, []byte(strings.Repeat("z", 32)), "", good()),
		"alg none":         none,
		"HS384":            signJWT(t, jwt.SigningMethodHS384, hsSecret, "", good()),
		"claims changed":   parts[0] + "." + base64.RawURLEncoding.EncodeToString([]byte(`{"sub":"victim","exp":9999999999,"iss":"idp","aud":"wsready","org":"x"}`)) + "." + parts[2],
		"no sub":           hs(with("sub", nil)),
		"empty sub":        hs(with("sub", "")),
		"sub not a string": hs(with("sub", 42)),
		"sub too long":     hs(with("sub", strings.Repeat("s", MaxIdentityBytes+1))),
		"no exp":           hs(with("exp", nil)),
		"exp not a number": hs(with("exp", "tomorrow")),
		"other issuer":     hs(with("iss", "evil")),
		"no issuer":        hs(with("iss", nil)),
		"other audience":   hs(with("aud", "another-service")),
		"not yet valid":    hs(with("nbf", time.Now().Add(time.Hour).Unix())),
		"no tenant":        hs(with("org", nil)),
		"tenant a number":  hs(with("org", 3)),
		"garbage":          "a.b.c",
		"empty parts":      "..",
	}
	for name, tok := range bad {
		_, a, ce := f.authWith(tok)
		if ce.Code != protocol.CloseForbidden || ce.Reason != "bad token" {
			t.Errorf("%s: authenticated %+v, close %d %q; want 4003 bad token", name, a, ce.Code, ce.Reason)
		}
	}
	st := f.srv.Stats().Auth
	if len(st.RejectionsByID) != 0 || st.TrackedIDs != 0 || st.TrackedAddrs != 1 || st.Rejected != uint64(len(bad)) {
		t.Fatalf("auth stats %+v: bad JWTs must count against the address only", st)
	}
	if _, a, ce := f.authWith(hs(good())); a.Type != protocol.TypeAuthenticated {
		t.Fatalf("victim's good token after the bad ones: %v", ce)
	}
}

// The algorithm comes from the key, never from the token: with an RSA
// public key, an HS256 token whose HMAC secret is that key's PEM bytes
// (the classic confusion) is refused; so is an RS256 token against a P-256
// key. Each key verifies its own algorithm.
func TestJWTAlgorithmIsPinnedByTheKey(t *testing.T) {
	rk, ek := rsaKey(t, 2048), ecKey(t, elliptic.P256())
	rsaPEM, ecPEM := pemOf(t, &rk.PublicKey), pemOf(t, &ek.PublicKey)
	rs := newFixture(t, &Options{JWT: &JWTOptions{PublicKeyPEM: rsaPEM}})
	es := newFixture(t, &Options{JWT: &JWTOptions{PublicKeyPEM: ecPEM}})
	c := claimsFor("alice", time.Minute)
	for _, tc := range []struct {
		name string
		f    *fixture
		tok  string
		ok   bool
	}{
		{"RS256 with the RSA key", rs, signJWT(t, jwt.SigningMethodRS256, rk, "", c), true},
		{"HS256 keyed by the RSA key's PEM", rs, signJWT(t, jwt.SigningMethodHS256, rsaPEM, "", c), false},
		{"HS256 keyed by the RSA key's DER", rs, signJWT(t, jwt.SigningMethodHS256, x509.MarshalPKCS1PublicKey(&rk.PublicKey), "", c), false},
		{"PS256 with the RSA key", rs, signJWT(t, jwt.SigningMethodPS256, rk, "", c), false},
		{"RS512 with the RSA key", rs, signJWT(t, jwt.SigningMethodRS512, rk, "", c), false},
		{"ES256 with the P-256 key", es, signJWT(t, jwt.SigningMethodES256, ek, "", c), true},
		{"RS256 against the P-256 key", es, signJWT(t, jwt.SigningMethodRS256, rk, "", c), false},
		{"HS256 keyed by the P-256 key's PEM", es, signJWT(t, jwt.SigningMethodHS256, ecPEM, "", c), false},
	} {
		_, a, ce := tc.f.authWith(tc.tok)
		if got := a.Type == protocol.TypeAuthenticated; got != tc.ok || !tc.ok && ce.Code != protocol.CloseForbidden {
			t.Errorf("%s: authenticated %v (close %d %q), want %v", tc.name, got, ce.Code, ce.Reason, tc.ok)
		}
	}
}

// writeJWKS writes a JWKS file of keys (by kid) with a rename, as an
// operator should.
func writeJWKS(t *testing.T, path string, body string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func jwkRSA(kid string, k *rsa.PublicKey) map[string]any {
	return map[string]any{"kty": "RSA", "kid": kid, "use": "sig", "alg": "RS256",
		"n": base64.RawURLEncoding.EncodeToString(k.N.Bytes()), "e": base64.RawURLEncoding.EncodeToString(big.NewInt(int64(k.E)).Bytes())}
}

func jwkEC(kid string, k *ecdsa.PublicKey) map[string]any {
	b, err := k.Bytes()
	if err != nil {
		panic(err)
	}
	return map[string]any{"kty": "EC", "kid": kid, "crv": "P-256",
		"x": base64.RawURLEncoding.EncodeToString(b[1:33]), "y": base64.RawURLEncoding.EncodeToString(b[33:])}
}

func jwksOf(keys ...map[string]any) string {
	b, _ := json.Marshal(map[string]any{"keys": keys})
	return string(b)
}

// A JWKS file's key is picked by kid; the file is read again when it
// changes; a damaged or emptied file is logged and the keys read before
// are kept, never silently none.
func TestJWKSFileIsReadAgainWhenItChanges(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "jwks.json")
	r1, e2 := rsaKey(t, 2048), ecKey(t, elliptic.P256())
	writeJWKS(t, path, jwksOf(jwkRSA("r1", &r1.PublicKey), map[string]any{"kty": "oct", "kid": "sym", "k": "c2VjcmV0"}))
	var logs logBuf
	// The file is checked by Options.Now: the test moves it past each
	// check interval instead of sleeping.
	clock := newTestClock()
	f := newFixture(t, &Options{JWT: &JWTOptions{JWKSFile: path}, Now: clock.now})
	f.srv.auth.jwt.jwks.log = logs.logger()
	c := claimsFor("alice", time.Minute)
	ok := func(tok string) bool {
		t.Helper()
		_, a, _ := f.authWith(tok)
		return a.Type == protocol.TypeAuthenticated
	}
	tokR1 := signJWT(t, jwt.SigningMethodRS256, r1, "r1", c)
	tokE2 := signJWT(t, jwt.SigningMethodES256, e2, "e2", c)
	if !ok(tokR1) || ok(tokE2) || ok(signJWT(t, jwt.SigningMethodRS256, r1, "", c)) || ok(signJWT(t, jwt.SigningMethodRS256, r1, "e2", c)) {
		t.Fatal("first file: want r1's token in, e2's and kid-less ones out")
	}
	if ok(signJWT(t, jwt.SigningMethodHS256, []byte("secret"), "sym", c)) {
		t.Fatal("a symmetric key in the JWKS verified a token")
	}
	// A new key: read at once on its unknown kid (at most every 100 ms).
	writeJWKS(t, path, jwksOf(jwkRSA("r1", &r1.PublicKey), jwkEC("e2", &e2.PublicKey)))
	clock.advance(jwksMissInterval)
	if !ok(tokE2) || !ok(tokR1) {
		t.Fatal("after the new file: want both tokens in")
	}
	if len(logs.lines("INFO", "JWKS file loaded", "keys=2")) != 1 {
		t.Fatalf("logs:\n%s", logs.String())
	}
	// Damaged, then no usable key: logged, the keys stay.
	for i, body := range []string{`{"keys": [`, jwksOf(map[string]any{"kty": "oct", "kid": "x", "k": "c2VjcmV0"}), `{"keys":[{"kty":"RSA","kid":"r9","n":"!!","e":"AQAB"}]}`} {
		writeJWKS(t, path, body)
		clock.advance(jwksCheckInterval)
		if !ok(tokR1) || !ok(tokE2) {
			t.Fatalf("damaged file %d: the keys read before were dropped", i)
		}
		if n := len(logs.lines("WARN", "JWKS file not loaded: keeping the keys read before", "keys=2")); n != i+1 {
			t.Fatalf("damaged file %d: %d warnings, want %d:\n%s", i, n, i+1, logs.String())
		}
	}
	// Gone: logged once, the keys stay.
	os.Remove(path)
	clock.advance(jwksCheckInterval)
	if !ok(tokR1) || !ok(tokE2) {
		t.Fatal("file gone: the keys read before were dropped")
	}
	clock.advance(jwksCheckInterval)
	ok(tokR1)
	if n := len(logs.lines("WARN", "JWKS file not readable")); n != 1 {
		t.Fatalf("%d warnings for the missing file, want 1:\n%s", n, logs.String())
	}
	// Back, with r1 only: e2 is out.
	writeJWKS(t, path, jwksOf(jwkRSA("r1", &r1.PublicKey)))
	clock.advance(jwksCheckInterval)
	if !ok(tokR1) || ok(tokE2) {
		t.Fatal("file back with r1 only: want r1 in, e2 out")
	}
}

// New refuses JWT options it cannot use, naming them.
func TestNewRefusesUnusableJWTOptions(t *testing.T) {
	dir := t.TempDir()
	damaged := filepath.Join(dir, "damaged.json")
	os.WriteFile(damaged, []byte(`{"keys":`), 0o600)
	empty := filepath.Join(dir, "empty.json")
	os.WriteFile(empty, []byte(`{"keys":[]}`), 0o600)
	many := filepath.Join(dir, "many.json")
	var keys []map[string]any
	for range maxJWKSKeys + 1 {
		keys = append(keys, map[string]any{"kty": "oct"})
	}
	os.WriteFile(many, []byte(jwksOf(keys...)), 0o600)
	dup := filepath.Join(dir, "dup.json")
	ek := ecKey(t, elliptic.P256())
	os.WriteFile(dup, []byte(jwksOf(jwkEC("a", &ek.PublicKey), jwkEC("a", &ek.PublicKey))), 0o600)
	for name, o := range map[string]*JWTOptions{
		"no key":            {},
		"two keys":          {HS256Secret: hsSecret, JWKSFile: damaged},
		"short secret":      {HS256Secret: []byte("short")},
		"not PEM":           {PublicKeyPEM: []byte("not a key")},
		"a private key PEM": {PublicKeyPEM: pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte{1}})},
		"RSA 1024":          {PublicKeyPEM: pemOf(t, &rsaKey(t, 1024).PublicKey)},
		"P-384":             {PublicKeyPEM: pemOf(t, &ecKey(t, elliptic.P384()).PublicKey)},
		"negative leeway":   {HS256Secret: hsSecret, Leeway: -time.Second},
		"tenant claim sub":  {HS256Secret: hsSecret, TenantClaim: "sub"},
		"missing JWKS":      {JWKSFile: filepath.Join(dir, "none.json")},
		"damaged JWKS":      {JWKSFile: damaged},
		"empty JWKS":        {JWKSFile: empty},
		"JWKS of 101 keys":  {JWKSFile: many},
		"JWKS repeats kid":  {JWKSFile: dup},
	} {
		if _, err := New(&Options{JWT: o, Logger: discard()}); err == nil || !strings.Contains(err.Error(), "Options.JWT") {
			t.Errorf("%s: %v, want an error naming Options.JWT", name, err)
		}
	}
	if _, err := New(&Options{Auth: AuthOff, JWT: &JWTOptions{HS256Secret: hsSecret}}); err == nil || !strings.Contains(err.Error(), "Options.Auth") {
		t.Errorf("Auth off with JWT: %v", err)
	}
}

// A token's other string claims become Claims within the Identity's
// bounds, by key order; the registered ones and the tenant's do not.
func TestJWTClaimsAreBounded(t *testing.T) {
	c := jwtClaims{"sub": "u", "iss": "i", "jti": "j", "org": "acme", "long": strings.Repeat("v", 257), "num": 1.0, strings.Repeat("k", 65): "v"}
	for i := range 20 {
		c["c"+string(rune('a'+i))] = "x"
	}
	got := boundedClaims(c, "org")
	if len(got) != MaxClaims || got["ca"] != "x" || got["cp"] != "x" || got["cq"] != "" {
		t.Fatalf("claims %v: want ca..cp", got)
	}
	if err := (Identity{User: "u", Claims: got}).Validate(); err != nil {
		t.Fatal(err)
	}
	big := jwtClaims{}
	for i := range 12 {
		big["k"+string(rune('a'+i))] = strings.Repeat("v", 250)
	}
	got = boundedClaims(big, "")
	total := 0
	for k, v := range got {
		total += len(k) + len(v)
	}
	if len(got) != 8 || total > MaxClaimsBytes {
		t.Fatalf("%d claims of %d bytes: want 8 within %d", len(got), total, MaxClaimsBytes)
	}
}

// The details a JWT gets wrong are bad tokens, 4003 "bad token" through
// the real server: a crit header (RFC 7515: this server understands no
// extension, so any crit must be refused), a NumericDate past what
// time.Time holds (an exp of 1e30 read as a date in 1677: "expired"), a
// control character in sub or the tenant (a NUL made another name), and a
// token past protocol.MaxTokenBytes (closed "auth required", as if no
// auth frame came). A far-future exp within the bounds is good, and a
// claim with a control character is left out of the Identity.
func TestJWTMalformedDetailsAreBadTokens(t *testing.T) {
	var mu sync.Mutex
	var seen []Identity
	f := newFixture(t, &Options{BadTicketThreshold: 100, JWT: &JWTOptions{HS256Secret: hsSecret, TenantClaim: "org"},
		Authorize: func(_ context.Context, id Identity, a Action) error {
			mu.Lock()
			seen = append(seen, id)
			mu.Unlock()
			return nil
		}})
	with := func(k string, v any) jwt.MapClaims {
		c := claimsFor("victim", time.Minute)
		c[k] = v
		return c
	}
	hs := func(c jwt.MapClaims) string { return signJWT(t, jwt.SigningMethodHS256, hsSecret, "", c) }
	crit := func(v any) string {
		tok := jwt.NewWithClaims(jwt.SigningMethodHS256, claimsFor("victim", time.Minute))
		tok.Header["crit"] = v
		s, err := tok.SignedString(hsSecret)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	bad := []struct{ name, tok string }{
		{"crit naming an unknown parameter", crit([]string{"http://example.com/ext"})},
		{"crit naming a registered claim", crit([]string{"exp"})},
		{"crit empty", crit([]string{})},
		{"exp 1e30", hs(with("exp", 1e30))},
		{"exp -1e30", hs(with("exp", -1e30))},
		{"exp past year 9999", hs(with("exp", 253402300800))},
		{"nbf 1e30", hs(with("nbf", 1e30))},
		{"iat 1e30", hs(with("iat", 1e30))},
		{"NUL in sub", hs(with("sub", "victim\x00admin"))},
		{"newline in sub", hs(with("sub", "victim\nlevel=ERROR"))},
		{"DEL in sub", hs(with("sub", "victim\x7f"))},
		{"C1 control in sub", hs(with("sub", "victim\u0085"))},
		{"NUL in tenant", hs(with("org", "acme\x00"))},
		{"over MaxTokenBytes", hs(with("pad", strings.Repeat("p", protocol.MaxTokenBytes)))},
	}
	for _, c := range bad {
		_, a, ce := f.authWith(c.tok)
		if ce.Code != protocol.CloseForbidden || ce.Reason != "bad token" {
			t.Errorf("%s: authenticated %+v, close %d %q; want 4003 bad token", c.name, a, ce.Code, ce.Reason)
		}
	}
	if st := f.srv.Stats().Auth; st.TrackedIDs != 0 || st.TrackedAddrs != 1 || st.Rejected != uint64(len(bad)) {
		t.Errorf("auth stats %+v: want every one counted against the address", st)
	}
	// With AuthOptional an oversized token is refused too, not served
	// anonymously after an error frame.
	g := newFixture(t, &Options{Auth: AuthOptional})
	if _, a, ce := g.authWith(strings.Repeat("t", protocol.MaxTokenBytes+1)); ce.Code != protocol.CloseForbidden || ce.Reason != "bad ticket" {
		t.Errorf("oversized ticket with auth optional: authenticated %+v, close %d %q; want 4003 bad ticket", a, ce.Code, ce.Reason)
	}
	// The last NumericDate in bounds is a good, far-off expiry.
	far := with("exp", int64(253402300799))
	far["note"] = "two\nlines"
	far["role"] = "admin"
	p, a, ce := f.authWith(hs(far))
	if a.ExpiresAt != 253402300799000 {
		t.Fatalf("exp 9999-12-31: authenticated %+v, close %d %q", a, ce.Code, ce.Reason)
	}
	p.send(protocol.Message{Type: protocol.TypeSubscribe, Topic: "room"})
	p.next(protocol.TypeSubscribed, time.Second)
	mu.Lock()
	got := seen
	mu.Unlock()
	want := Identity{User: "victim", Tenant: "acme", Claims: map[string]string{"role": "admin"}}
	if len(got) != 1 || !reflect.DeepEqual(got[0], want) {
		t.Fatalf("Authorize saw %+v, want %+v (no claim with a control character)", got, want)
	}
}
