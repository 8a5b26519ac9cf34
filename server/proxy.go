//go:build !js

package server

import (
	"net/http"
	"net/netip"
	"strings"
)

// The real client address behind trusted proxies. Every per-address limit
// (MaxConnsPerIP, the handshake ceiling per address TenantRate, the ticket
// endpoint's TicketRate, the bad-token backstop) keys by clientIP. It is
// the TCP peer's address, unless that peer is in Options.TrustedProxies:
// then the forwarding headers the proxies wrote are read, right to left,
// and the first address that is not itself a trusted proxy is the client
// (what the nearest untrusted hop connected from; anything left of it was
// written by the client, who may write anything).
//
// The headers: X-Forwarded-For (a comma-separated list of addresses) and
// Forwarded (RFC 7239: its for= parameters). A proxy that sets one header
// usually passes the other through from the client untouched, so when
// both are present they must name the same client, or neither is
// believed. Anything malformed on the way (an address that does not parse,
// "unknown" or an obfuscated identifier, an element without for=, a quote
// that does not close, more than maxForwardedHops hops) makes the peer's
// own address the client's: never a crash, never a guess.

// maxForwardedHops bounds how many hops are walked back from the peer.
const maxForwardedHops = 32

// clientIP is the address a request's per-address limits key by: the
// peer's, or behind trusted proxies the client's they forwarded.
func (s *Server) clientIP(r *http.Request) string {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return remoteIP(r.RemoteAddr) // not an IP peer (a pipe, a test): as it is
	}
	peer := ap.Addr().Unmap().WithZone("") // a zoned address matches no prefix
	if !s.trusted(peer) {
		return peer.String()
	}
	xff, hasXFF := r.Header.Values("X-Forwarded-For"), len(r.Header.Values("X-Forwarded-For")) > 0
	fwd, hasFwd := r.Header.Values("Forwarded"), len(r.Header.Values("Forwarded")) > 0
	var client netip.Addr
	switch {
	case hasXFF && hasFwd:
		a, okA := s.rightmostUntrusted(xffHops(xff))
		b, okB := s.rightmostUntrusted(forwardedHops(fwd))
		if !okA || !okB || a != b {
			return peer.String()
		}
		client = a
	case hasXFF:
		a, ok := s.rightmostUntrusted(xffHops(xff))
		if !ok {
			return peer.String()
		}
		client = a
	case hasFwd:
		a, ok := s.rightmostUntrusted(forwardedHops(fwd))
		if !ok {
			return peer.String()
		}
		client = a
	default:
		return peer.String()
	}
	return client.String()
}

func (s *Server) trusted(a netip.Addr) bool {
	for _, p := range s.opts.TrustedProxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// rightmostUntrusted walks hops (left to right, as the headers list them)
// from the right and returns the first address that is not a trusted
// proxy; if every one is, the leftmost. An invalid hop on the way, too
// many hops or none is not ok.
func (s *Server) rightmostUntrusted(hops []netip.Addr, ok bool) (netip.Addr, bool) {
	if !ok || len(hops) == 0 {
		return netip.Addr{}, false
	}
	for i, walked := len(hops)-1, 0; i >= 0; i, walked = i-1, walked+1 {
		if walked == maxForwardedHops || !hops[i].IsValid() {
			return netip.Addr{}, false
		}
		if !s.trusted(hops[i]) || i == 0 {
			return hops[i], true
		}
	}
	return netip.Addr{}, false
}

// xffHops reads X-Forwarded-For's values as one list; an entry that is
// not an address (with or without a port) is an invalid hop. ok is false
// for a list too long to walk.
func xffHops(values []string) ([]netip.Addr, bool) {
	var hops []netip.Addr
	for _, v := range values {
		for item := range strings.SplitSeq(v, ",") {
			if len(hops) > maxForwardedHops*4 {
				return nil, false
			}
			hops = append(hops, parseHop(strings.TrimSpace(item)))
		}
	}
	return hops, true
}

// forwardedHops reads Forwarded's values (RFC 7239) as one list of
// elements, each hop its for= address; an element without for=, or whose
// for= is not an address ("unknown", "_hidden"), is an invalid hop. ok is
// false for a header that does not parse (an unclosed quote) or is too
// long to walk.
func forwardedHops(values []string) ([]netip.Addr, bool) {
	var hops []netip.Addr
	for _, v := range values {
		elems, ok := splitQuoted(v, ',')
		if !ok {
			return nil, false
		}
		for _, elem := range elems {
			if len(hops) > maxForwardedHops*4 {
				return nil, false
			}
			pairs, ok := splitQuoted(elem, ';')
			if !ok {
				return nil, false
			}
			hop := netip.Addr{}
			for _, pair := range pairs {
				name, value, found := strings.Cut(strings.TrimSpace(pair), "=")
				if found && strings.EqualFold(strings.TrimSpace(name), "for") {
					hop = parseHop(unquote(strings.TrimSpace(value)))
				}
			}
			hops = append(hops, hop)
		}
	}
	return hops, true
}

// splitQuoted splits s at sep outside quoted strings (RFC 7230
// quoted-string, with backslash escapes); false if a quote does not close.
func splitQuoted(s string, sep byte) ([]string, bool) {
	var parts []string
	start, quoted, escaped := 0, false, false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case escaped:
			escaped = false
		case quoted && c == '\\':
			escaped = true
		case c == '"':
			quoted = !quoted
		case !quoted && c == sep:
			parts = append(parts, s[start:i])
			start = i + 1
		}
	}
	if quoted || escaped {
		return nil, false
	}
	return append(parts, s[start:]), true
}

// unquote strips a quoted-string's quotes and escapes; a token is as it is.
func unquote(v string) string {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return v
	}
	var b strings.Builder
	for i := 1; i < len(v)-1; i++ {
		if v[i] == '\\' && i+1 < len(v)-1 {
			i++
		}
		b.WriteByte(v[i])
	}
	return b.String()
}

// parseHop reads one hop's address: "1.2.3.4", "1.2.3.4:80", "2001:db8::1",
// "[2001:db8::1]" or "[2001:db8::1]:80"; anything else is the invalid
// (zero) Addr. IPv4-mapped IPv6 is read as IPv4; a zone is dropped.
func parseHop(s string) netip.Addr {
	if a, err := netip.ParseAddr(s); err == nil {
		return a.Unmap().WithZone("")
	}
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap().WithZone("")
	}
	if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
		if a, err := netip.ParseAddr(s[1 : len(s)-1]); err == nil && a.Is6() {
			return a.Unmap().WithZone("")
		}
	}
	return netip.Addr{}
}
