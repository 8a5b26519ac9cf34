//go:build !js

package server

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/golang-jwt/jwt/v5"
	"github.com/wsready/wsready/protocol"
)

// JWTs: with Options.JWT, the auth frame's token may be a JWT minted by
// the application's identity provider instead of one of our tickets. It is
// checked with github.com/golang-jwt/jwt/v5 (maintained, the most used Go
// JWT library, no dependencies of its own):
//
//   - the algorithm is pinned by the key: an HS256 secret verifies HS256
//     only, an RSA public key RS256 only, a P-256 key ES256 only; a token
//     naming another alg ("none", HS256 against a public key's bytes) is
//     bad;
//   - the token is at most protocol.MaxTokenBytes, and a header with crit
//     is refused (RFC 7515: crit names extensions that must be
//     understood, and this server understands none);
//   - sub is required (the Identity's User, 1 to MaxIdentityBytes bytes
//     of UTF-8 without control characters), and so is exp, which drives
//     the same 4001 close as a ticket's expiry (at exp + Leeway); nbf is
//     checked when present; iss and aud when configured; exp, nbf and iat
//     are numbers within years 1 to 9999 (beyond, malformed, not expired);
//   - TenantClaim, when configured, is required (a string, as sub is:
//     the Tenant);
//   - the other string claims become the Identity's Claims, by key order,
//     as many as fit its bounds (the registered ones, iss sub aud exp nbf
//     iat jti, are not copied, nor are any with a control character).
//
// A token that fails any of this is a token that did not verify: closed
// with 4003 "bad token" and counted against the address it came from,
// never the sub it names. One that verified but has expired is counted
// against its user at that address, and closed with 4001, as an expired
// ticket is.

// JWTOptions says which JWTs the server takes (Options.JWT). Exactly one
// of HS256Secret, PublicKeyPEM and JWKSFile is set.
type JWTOptions struct {
	// HS256Secret verifies HS256 tokens: at least 32 bytes.
	HS256Secret []byte
	// PublicKeyPEM verifies RS256 tokens (an RSA key of 2048 bits or
	// more) or ES256 tokens (a P-256 key): a PEM "PUBLIC KEY" (PKIX),
	// "RSA PUBLIC KEY" (PKCS #1) or "CERTIFICATE" block.
	PublicKeyPEM []byte
	// JWKSFile is a JSON Web Key Set file (RFC 7517) of RSA (RS256) and
	// P-256 (ES256) public keys; a token's kid header picks its key (a
	// key without kid is picked by tokens without one). Keys of other
	// types or algorithms, or whose use is not "sig", are skipped. The
	// file is at most 1 MiB and 100 keys. It is read by New (which fails
	// if it cannot be read, is damaged, or holds no usable key), then
	// checked for a change (size or modification time) at most once a
	// second, and at once when a token names a kid it does not hold (at
	// most every 100 ms): a changed file is read again. A file that has
	// become unreadable, damaged or empty of usable keys is logged at
	// WARN and the keys read before are kept. Replace it with a rename,
	// so a half-written file is never read.
	JWKSFile string
	// TenantClaim names the claim that holds the tenant (e.g. "org_id"):
	// a token without it, or where it is not a string of 1 to
	// MaxIdentityBytes bytes, is bad. Default "": no tenant.
	TenantClaim string
	// Issuer and Audience, when set, must be the token's iss and one of
	// its aud. Default "": not checked.
	Issuer   string
	Audience string
	// Leeway is the clock skew allowed on exp and nbf: a token is good
	// until exp + Leeway, when the connection is closed with 4001.
	// Default 0: none.
	Leeway time.Duration
}

// jwtKey is a verification key and the one algorithm it verifies.
type jwtKey struct {
	alg string
	key any
}

type jwtVerifier struct {
	tenantClaim string
	leeway      time.Duration
	now         func() time.Time
	parser      *jwt.Parser
	static      *jwtKey   // HS256Secret or PublicKeyPEM
	jwks        *jwksFile // or JWKSFile
}

// newJWTVerifier checks o and reads its keys; nil o is no verifier.
func newJWTVerifier(o *JWTOptions, log *slog.Logger, now func() time.Time) (*jwtVerifier, error) {
	if o == nil {
		return nil, nil
	}
	sources := 0
	for _, set := range []bool{len(o.HS256Secret) > 0, len(o.PublicKeyPEM) > 0, o.JWKSFile != ""} {
		if set {
			sources++
		}
	}
	if sources != 1 {
		return nil, errors.New("Options.JWT needs exactly one of HS256Secret, PublicKeyPEM and JWKSFile")
	}
	if o.Leeway < 0 {
		return nil, fmt.Errorf("Options.JWT.Leeway is %v: it must not be negative", o.Leeway)
	}
	if registeredClaims[o.TenantClaim] {
		return nil, fmt.Errorf("Options.JWT.TenantClaim is %q, a registered claim: name the claim that holds the tenant", o.TenantClaim)
	}
	v := &jwtVerifier{tenantClaim: o.TenantClaim, leeway: o.Leeway, now: now}
	switch {
	case len(o.HS256Secret) > 0:
		if len(o.HS256Secret) < minAuthKey {
			return nil, fmt.Errorf("Options.JWT.HS256Secret has %d bytes: at least %d", len(o.HS256Secret), minAuthKey)
		}
		v.static = &jwtKey{alg: "HS256", key: append([]byte(nil), o.HS256Secret...)}
	case len(o.PublicKeyPEM) > 0:
		k, err := parsePublicKeyPEM(o.PublicKeyPEM)
		if err != nil {
			return nil, fmt.Errorf("Options.JWT.PublicKeyPEM: %w", err)
		}
		v.static = &k
	default:
		f := &jwksFile{path: o.JWKSFile, log: log}
		if err := f.load(now()); err != nil {
			return nil, fmt.Errorf("Options.JWT.JWKSFile: %w", err)
		}
		v.jwks = f
	}
	opts := []jwt.ParserOption{
		jwt.WithValidMethods([]string{"HS256", "RS256", "ES256"}), // and the key's own, in keyFor
		jwt.WithLeeway(o.Leeway),
		jwt.WithTimeFunc(now),
	}
	if o.Issuer != "" {
		opts = append(opts, jwt.WithIssuer(o.Issuer))
	}
	if o.Audience != "" {
		opts = append(opts, jwt.WithAudience(o.Audience))
	}
	v.parser = jwt.NewParser(opts...)
	return v, nil
}

// registeredClaims are RFC 7519's: never copied into Identity.Claims.
var registeredClaims = map[string]bool{"iss": true, "sub": true, "aud": true, "exp": true, "nbf": true, "iat": true, "jti": true}

// isJWT tells a JWT (header.payload.signature) from a ticket (one dot).
func isJWT(tok string) bool { return strings.Count(tok, ".") == 2 }

// errBadJWT is a JWT that did not verify; its text never says more (the
// reason would quote the token's claims).
var errBadJWT = errors.New("bad token")

// jwtClaims are a token's claims, read as jwt.MapClaims but for exp,
// which the library's validator must not judge: an expired token that
// verified is refused against its user (4001), one that did not against
// its address (4003), and the validator cannot tell them apart.
type jwtClaims map[string]any

func (c jwtClaims) GetExpirationTime() (*jwt.NumericDate, error) { return nil, nil }
func (c jwtClaims) GetIssuedAt() (*jwt.NumericDate, error)       { return jwt.MapClaims(c).GetIssuedAt() }
func (c jwtClaims) GetNotBefore() (*jwt.NumericDate, error)      { return jwt.MapClaims(c).GetNotBefore() }
func (c jwtClaims) GetIssuer() (string, error)                   { return jwt.MapClaims(c).GetIssuer() }
func (c jwtClaims) GetSubject() (string, error)                  { return jwt.MapClaims(c).GetSubject() }
func (c jwtClaims) GetAudience() (jwt.ClaimStrings, error)       { return jwt.MapClaims(c).GetAudience() }

// verify checks a JWT and makes its Identity. An error means it did not
// verify; an expired one that did comes back with expires in the past.
func (v *jwtVerifier) verify(tok string, now time.Time) (ticket, error) {
	if len(tok) > protocol.MaxTokenBytes {
		return ticket{}, errBadJWT // the auth frame's bound, whoever signed it
	}
	claims := jwtClaims{}
	t, err := v.parser.ParseWithClaims(tok, &claims, v.keyFor)
	if err != nil {
		return ticket{}, errBadJWT
	}
	if _, ok := t.Header["crit"]; ok {
		// RFC 7515 4.1.11: a token whose crit names an extension the
		// recipient does not understand must be refused, and this server
		// understands none.
		return ticket{}, errBadJWT
	}
	for _, name := range []string{"exp", "nbf", "iat"} {
		if !numericDateInRange(claims[name]) {
			return ticket{}, errBadJWT
		}
	}
	m := jwt.MapClaims(claims)
	sub, err := m.GetSubject()
	if err != nil || sub == "" || !identityText(sub) {
		return ticket{}, errBadJWT
	}
	exp, err := m.GetExpirationTime()
	if err != nil || exp == nil {
		return ticket{}, errBadJWT
	}
	id := Identity{User: sub}
	if v.tenantClaim != "" {
		tenant, ok := claims[v.tenantClaim].(string)
		if !ok || tenant == "" || !identityText(tenant) {
			return ticket{}, errBadJWT
		}
		id.Tenant = tenant
	}
	id.Claims = boundedClaims(claims, v.tenantClaim)
	if id.Validate() != nil {
		return ticket{}, errBadJWT // sub or the tenant past their bounds
	}
	issued := now
	if iat, err := m.GetIssuedAt(); err == nil && iat != nil {
		issued = iat.Time
	}
	return ticket{identity: id, issued: issued, expires: exp.Time.Add(v.leeway)}, nil
}

// NumericDate bounds (RFC 7519 2: seconds since 1970, any JSON number):
// years 1 to 9999, what RFC 3339 can write. Past them a date is not "far
// off" but malformed: it overflows time.Time (or the expiresAt the
// authenticated frame gives in milliseconds), and the library turned an
// exp of 1e30 into one in 1677, so it read as expired.
const (
	minNumericDate = -62135596800 // 0001-01-01T00:00:00Z
	maxNumericDate = 253402300799 // 9999-12-31T23:59:59Z
)

// numericDateInRange: v, a claim as decoded (absent is nil), is absent or
// a number within the NumericDate bounds. Another type is the library's
// to refuse.
func numericDateInRange(v any) bool {
	f, ok := v.(float64)
	return !ok || f >= minNumericDate && f <= maxNumericDate
}

// identityText: s is UTF-8 with no control character (C0, DEL, C1). The
// user and the tenant name people and reach the application's hooks, logs
// and the welcome frame; a NUL or a newline in them is a forgery of
// another name or of a log line, never a name.
func identityText(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}

// boundedClaims copies a token's string claims, but the registered ones
// and the tenant's, in key order, skipping any that does not fit
// Identity's bounds: at most MaxClaims, keys 1 to 64 bytes, values at
// most 256, MaxClaimsBytes in all, and any with a control character in its
// key or value (identityText).
func boundedClaims(claims jwtClaims, tenantClaim string) map[string]string {
	keys := make([]string, 0, len(claims))
	for k := range claims {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var out map[string]string
	total := 0
	for _, k := range keys {
		s, ok := claims[k].(string)
		if !ok || registeredClaims[k] || k == tenantClaim || k == "" || len(k) > 64 || len(s) > 256 ||
			total+len(k)+len(s) > MaxClaimsBytes || !identityText(k) || !identityText(s) {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[k] = s
		total += len(k) + len(s)
		if len(out) == MaxClaims {
			break
		}
	}
	return out
}

// keyFor picks the key for a token, and refuses one whose alg is not the
// key's: the algorithm comes from the key, never from the token.
func (v *jwtVerifier) keyFor(t *jwt.Token) (any, error) {
	k := v.static
	if k == nil {
		kid, _ := t.Header["kid"].(string)
		found, ok := v.jwks.key(kid, v.now()) // Options.Now: a test moves it
		if !ok {
			return nil, errors.New("no key for this kid")
		}
		k = &found
	}
	if t.Method == nil || t.Method.Alg() != k.alg {
		return nil, errors.New("alg is not the key's")
	}
	return k.key, nil
}

// parsePublicKeyPEM reads the first PEM block of b as an RSA or P-256
// public key.
func parsePublicKeyPEM(b []byte) (jwtKey, error) {
	block, _ := pem.Decode(b)
	if block == nil {
		return jwtKey{}, errors.New("no PEM block")
	}
	var pub any
	var err error
	switch block.Type {
	case "PUBLIC KEY":
		pub, err = x509.ParsePKIXPublicKey(block.Bytes)
	case "RSA PUBLIC KEY":
		pub, err = x509.ParsePKCS1PublicKey(block.Bytes)
	case "CERTIFICATE":
		var cert *x509.Certificate
		if cert, err = x509.ParseCertificate(block.Bytes); err == nil {
			pub = cert.PublicKey
		}
	default:
		return jwtKey{}, fmt.Errorf("a PEM %q block: want PUBLIC KEY, RSA PUBLIC KEY or CERTIFICATE", block.Type)
	}
	if err != nil {
		return jwtKey{}, fmt.Errorf("failed to parse the public key: %w", err)
	}
	return publicJWTKey(pub)
}

// publicJWTKey pins a public key's algorithm: RS256 for RSA (2048 bits
// or more), ES256 for P-256.
func publicJWTKey(pub any) (jwtKey, error) {
	switch k := pub.(type) {
	case *rsa.PublicKey:
		if k.N.BitLen() < 2048 {
			return jwtKey{}, fmt.Errorf("an RSA key of %d bits: at least 2048", k.N.BitLen())
		}
		return jwtKey{alg: "RS256", key: k}, nil
	case *ecdsa.PublicKey:
		if k.Curve != elliptic.P256() {
			return jwtKey{}, fmt.Errorf("an EC key on %s: only P-256 (ES256)", k.Curve.Params().Name)
		}
		return jwtKey{alg: "ES256", key: k}, nil
	default:
		return jwtKey{}, fmt.Errorf("a %T: want an RSA (RS256) or P-256 (ES256) public key", pub)
	}
}

// The JWKS file's bounds, and how often it is checked for a change.
const (
	maxJWKSBytes      = 1 << 20
	maxJWKSKeys       = 100
	jwksCheckInterval = time.Second
	jwksMissInterval  = 100 * time.Millisecond
)

// jwksFile is a JWKS file's keys, read again when the file changes.
type jwksFile struct {
	path string
	log  *slog.Logger

	mu      sync.Mutex
	keys    map[string]jwtKey // by kid
	size    int64             // of the file last read (or last found damaged)
	mtime   time.Time
	checked time.Time // the last stat
}

// key returns kid's key, checking the file for a change first if it was
// not checked for jwksCheckInterval (jwksMissInterval when kid is not
// held).
func (f *jwksFile) key(kid string, now time.Time) (jwtKey, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	k, ok := f.keys[kid]
	since := now.Sub(f.checked)
	if since >= jwksCheckInterval || !ok && since >= jwksMissInterval {
		f.refresh(now)
		k, ok = f.keys[kid]
	}
	return k, ok
}

// load reads the file for New: any failure is an error.
func (f *jwksFile) load(now time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.checked = now
	st, err := os.Stat(f.path)
	if err != nil {
		return fmt.Errorf("failed to read the JWKS file: %w", err)
	}
	keys, err := readJWKS(f.path)
	if err != nil {
		return err
	}
	f.keys, f.size, f.mtime = keys, st.Size(), st.ModTime()
	return nil
}

// refresh reads the file again if its size or modification time changed.
// A file that cannot be read, is damaged or holds no usable key is
// logged (once per change) and the keys stay.
func (f *jwksFile) refresh(now time.Time) {
	f.checked = now
	st, err := os.Stat(f.path)
	if err != nil {
		if f.size != -1 {
			f.log.Warn("JWKS file not readable: keeping the keys read before", "file", f.path, "keys", len(f.keys), "err", err.Error())
			f.size = -1 // a later file of any size is a change
		}
		return
	}
	if st.Size() == f.size && st.ModTime().Equal(f.mtime) {
		return
	}
	f.size, f.mtime = st.Size(), st.ModTime()
	keys, err := readJWKS(f.path)
	if err != nil {
		f.log.Warn("JWKS file not loaded: keeping the keys read before", "file", f.path, "keys", len(f.keys), "err", err.Error())
		return
	}
	f.keys = keys
	f.log.Info("JWKS file loaded", "file", f.path, "keys", len(keys))
}

// jwk is one key of a JWKS file: the members this server reads.
type jwk struct {
	Kty string `json:"kty"`
	Kid string `json:"kid"`
	Use string `json:"use"`
	Alg string `json:"alg"`
	N   string `json:"n"`   // RSA
	E   string `json:"e"`   // RSA
	Crv string `json:"crv"` // EC
	X   string `json:"x"`   // EC
	Y   string `json:"y"`   // EC
}

// readJWKS reads a JWKS file: its usable keys by kid, or an error if it
// cannot be read, is past its bounds, is not a key set, repeats a kid or
// holds no usable key.
func readJWKS(path string) (map[string]jwtKey, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("failed to read the JWKS file: %w", err)
	}
	defer fh.Close()
	b, err := io.ReadAll(io.LimitReader(fh, maxJWKSBytes+1))
	if err != nil {
		return nil, fmt.Errorf("failed to read the JWKS file: %w", err)
	}
	if len(b) > maxJWKSBytes {
		return nil, fmt.Errorf("the JWKS file is over %d bytes", maxJWKSBytes)
	}
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(b, &set); err != nil {
		return nil, fmt.Errorf("the JWKS file is not a JSON key set: %w", err)
	}
	if len(set.Keys) > maxJWKSKeys {
		return nil, fmt.Errorf("the JWKS file has %d keys: at most %d", len(set.Keys), maxJWKSKeys)
	}
	keys := map[string]jwtKey{}
	for i, raw := range set.Keys {
		var j jwk
		if err := json.Unmarshal(raw, &j); err != nil {
			return nil, fmt.Errorf("the JWKS file's key %d: %w", i, err)
		}
		k, usable, err := j.key()
		if err != nil {
			return nil, fmt.Errorf("the JWKS file's key %d (kid %q): %w", i, j.Kid, err)
		}
		if !usable {
			continue
		}
		if _, dup := keys[j.Kid]; dup {
			return nil, fmt.Errorf("the JWKS file has kid %q twice", j.Kid)
		}
		keys[j.Kid] = k
	}
	if len(keys) == 0 {
		return nil, errors.New("the JWKS file holds no usable key (RSA for RS256 or P-256 for ES256, use sig)")
	}
	return keys, nil
}

// key makes j's verification key. usable is false for a key this server
// does not take (another type or algorithm, use other than sig); an error
// is a key of a type it takes that is malformed.
func (j jwk) key() (_ jwtKey, usable bool, _ error) {
	if j.Use != "" && j.Use != "sig" {
		return jwtKey{}, false, nil
	}
	switch {
	case j.Kty == "RSA" && (j.Alg == "" || j.Alg == "RS256"):
		n, err1 := base64.RawURLEncoding.DecodeString(j.N)
		e, err2 := base64.RawURLEncoding.DecodeString(j.E)
		if err1 != nil || err2 != nil || len(n) == 0 || len(e) == 0 || len(e) > 4 {
			return jwtKey{}, false, errors.New("n and e must be base64url big-endian integers")
		}
		exp := int(new(big.Int).SetBytes(e).Int64())
		if exp < 3 || exp%2 == 0 {
			return jwtKey{}, false, errors.New("e " + strconv.Itoa(exp) + " is not an RSA exponent")
		}
		k, err := publicJWTKey(&rsa.PublicKey{N: new(big.Int).SetBytes(n), E: exp})
		return k, err == nil, err
	case j.Kty == "EC" && j.Crv == "P-256" && (j.Alg == "" || j.Alg == "ES256"):
		x, err1 := base64.RawURLEncoding.DecodeString(j.X)
		y, err2 := base64.RawURLEncoding.DecodeString(j.Y)
		if err1 != nil || err2 != nil || len(x) != 32 || len(y) != 32 {
			return jwtKey{}, false, errors.New("x and y must be 32-byte base64url coordinates")
		}
		pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), append(append([]byte{4}, x...), y...))
		if err != nil {
			return jwtKey{}, false, fmt.Errorf("not a P-256 point: %w", err)
		}
		return jwtKey{alg: "ES256", key: pub}, true, nil
	}
	return jwtKey{}, false, nil
}
