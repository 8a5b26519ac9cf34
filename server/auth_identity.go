//go:build !js

package server

import (
	"errors"
	"strconv"
	"unicode/utf8"
)

// Identity is who a connection belongs to, as the application says:
// Options.Identify's answer from the upgrade request itself, the
// Authenticate hook's answer carried in a ticket, or a verified JWT's
// claims. The zero Identity is an anonymous connection (auth off, or
// optional and no ticket).
type Identity struct {
	// User is the application's user id: 1 to MaxIdentityBytes bytes of
	// UTF-8.
	User string
	// Tenant groups users for per-tenant limits (MaxConnsPerTenant,
	// TenantMsgRate): at most MaxIdentityBytes bytes of UTF-8; empty:
	// none, and no per-tenant limit applies.
	Tenant string
	// Claims are small application facts (a role, a plan) that hooks read;
	// at most MaxClaims entries, keys 1 to 64 bytes, values at most 256,
	// MaxClaimsBytes in all.
	Claims map[string]string
}

// The bounds of an Identity: a ticket carries it whole, so it stays small.
const (
	MaxIdentityBytes = 128
	MaxClaims        = 16
	MaxClaimsBytes   = 2048
)

// ErrBadIdentity is an Identity outside its bounds; errors.Is matches the
// error Validate returns.
var ErrBadIdentity = errors.New("invalid identity")

// Anonymous reports whether id names no user.
func (id Identity) Anonymous() bool { return id.User == "" }

// Validate reports an Identity outside its bounds (an anonymous one is
// valid).
func (id Identity) Validate() error {
	bad := func(what string) error { return &identityError{what: what} }
	if len(id.User) > MaxIdentityBytes || len(id.Tenant) > MaxIdentityBytes {
		return bad("user and tenant are at most " + strconv.Itoa(MaxIdentityBytes) + " bytes")
	}
	if !utf8.ValidString(id.User) || !utf8.ValidString(id.Tenant) {
		// The welcome and presence frames carry the user as a JSON string,
		// which would turn invalid bytes into U+FFFD: another user, and
		// possibly past its bound.
		return bad("user and tenant are UTF-8 text")
	}
	if !identityText(id.User) || !identityText(id.Tenant) {
		// A NUL or a newline in a name forges another name or a log line.
		return bad("user and tenant hold no control character")
	}
	if id.User == "" && (id.Tenant != "" || len(id.Claims) > 0) {
		return bad("a tenant or claims need a user")
	}
	if len(id.Claims) > MaxClaims {
		return bad("at most " + strconv.Itoa(MaxClaims) + " claims")
	}
	total := 0
	for k, v := range id.Claims {
		if k == "" || len(k) > 64 || len(v) > 256 {
			return bad("a claim's key is 1 to 64 bytes and its value at most 256")
		}
		if !utf8.ValidString(k) || !utf8.ValidString(v) {
			return bad("claims are UTF-8 text")
		}
		total += len(k) + len(v)
	}
	if total > MaxClaimsBytes {
		return bad("claims are at most " + strconv.Itoa(MaxClaimsBytes) + " bytes in all")
	}
	return nil
}

type identityError struct{ what string }

func (e *identityError) Error() string { return ErrBadIdentity.Error() + ": " + e.what }
func (e *identityError) Unwrap() error { return ErrBadIdentity }
