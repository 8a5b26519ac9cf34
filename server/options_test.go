//go:build !js

package server

import (
	"math"
	"strings"
	"testing"
	"time"
)

// New refuses what an option's doc rules out, naming the field, instead
// of silently taking the default; zero still means the default.
func TestNewRefusesInvalidOptions(t *testing.T) {
	cases := []struct {
		o    Options
		want string
	}{
		{Options{PingInterval: -time.Second}, "Options.PingInterval is -1s"},
		{Options{PingInterval: 2 * time.Hour}, "Options.PingInterval is 2h0m0s: at most 1h0m0s"},
		{Options{SweepGrace: -1}, "Options.SweepGrace"},
		{Options{HistoryTimeout: -time.Millisecond}, "Options.HistoryTimeout"},
		{Options{MaxConns: -1}, "Options.MaxConns is -1"},
		{Options{MaxSubscriptions: -3}, "Options.MaxSubscriptions"},
		{Options{AdmitRate: -1}, "Options.AdmitRate is -1"},
		{Options{TicketRate: math.NaN()}, "Options.TicketRate is NaN"},
		{Options{TenantRate: math.Inf(1)}, "Options.TenantRate is +Inf"},
		{Options{RefuseWith: "drop"}, `Options.RefuseWith is "drop"`},
		{Options{Auth: "maybe"}, `Options.Auth is "maybe"`},
		{Options{AuthKey: []byte("short")}, "Options.AuthKey has 5 bytes: at least 32"},
		{Options{AllowedHosts: []string{"example.com", " "}}, "Options.AllowedHosts holds an empty host name"},
		{Options{OriginPatterns: []string{"[a-"}}, `Options.OriginPatterns holds "[a-"`},
		{Options{MaxConnsPerTenant: -1}, "Options.MaxConnsPerTenant is -1"},
		{Options{TenantMsgRate: -2}, "Options.TenantMsgRate is -2"},
		{Options{TenantMsgRate: math.NaN()}, "Options.TenantMsgRate is NaN"},
		{Options{TenantMsgBurst: 5}, "Options.TenantMsgBurst is 5 without a TenantMsgRate"},
		{Options{TenantMsgRate: 1, TenantMsgBurst: -1}, "Options.TenantMsgBurst is -1"},
		{Options{TenantHandshakeRate: -1, TenantHandshakeBurst: 1}, "Options.TenantHandshakeRate is -1"},
		{Options{TenantHandshakeRate: math.Inf(1), TenantHandshakeBurst: 1}, "Options.TenantHandshakeRate is +Inf"},
		{Options{TenantHandshakeBurst: 3}, "Options.TenantHandshakeBurst is 3 without a TenantHandshakeRate"},
		{Options{TenantHandshakeRate: 2}, "Options.TenantHandshakeBurst is 0 with a TenantHandshakeRate"},
		{Options{TenantHandshakeRate: 2, TenantHandshakeBurst: -1}, "Options.TenantHandshakeBurst is -1"},
		{Options{SubscribeRate: -1}, "Options.SubscribeRate is -1"},
		{Options{SubscribeBurst: -4}, "Options.SubscribeBurst is -4"},
		{Options{JWT: &JWTOptions{PublicKeyPEM: []byte("not a PEM block")}}, "PEM"},
	}
	for _, c := range cases {
		o := c.o
		o.Logger = discard()
		s, err := New(&o)
		if err == nil {
			s.Close()
			t.Errorf("%+v: accepted", c.o)
			continue
		}
		if !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "failed to create the server: ") {
			t.Errorf("error %q, want it to say %q", err, c.want)
		}
		// Validate refuses the same, with the same words, making nothing.
		if verr := o.Validate(); verr == nil || verr.Error() != err.Error() {
			t.Errorf("%+v: Validate says %v, New %v", c.o, verr, err)
		}
	}
	if err := (*Options)(nil).Validate(); err != nil {
		t.Errorf("nil options: Validate says %v", err)
	}
	if err := (&Options{Demo: true, PingInterval: 25 * time.Second}).Validate(); err != nil {
		t.Errorf("valid options: Validate says %v", err)
	}
	// Every problem is named at once.
	_, err := New(&Options{MaxConns: -1, WriteTimeout: -1, Logger: discard()})
	if err == nil || !strings.Contains(err.Error(), "MaxConns") || !strings.Contains(err.Error(), "WriteTimeout") {
		t.Fatalf("two bad fields: %v", err)
	}
}

func TestZeroOptionsMeanTheDefaults(t *testing.T) {
	o, err := (&Options{}).cloneWithDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if o.PingInterval != 25*time.Second || o.MaxConns != 10000 || o.AdmitRate != 500 || o.RefuseWith != RefuseClose ||
		o.Auth != AuthOff || o.HistoryBytes != 256<<10 || o.Logger == nil || o.Now == nil {
		t.Fatalf("defaults: %+v", o)
	}
	if o.MaxConnsPerTenant != 0 || o.TenantMsgRate != 0 || o.TenantMsgBurst != 0 || o.TenantHandshakeRate != 0 || o.TenantHandshakeBurst != 0 {
		t.Fatalf("per-tenant limits on by default: %+v", o)
	}
	if o.SubscribeRate != 20 || o.SubscribeBurst != 64 {
		t.Fatalf("subscribe rate %v, burst %d; want 20/s, 64", o.SubscribeRate, o.SubscribeBurst)
	}
	if r, _ := (&Options{MaxSubscriptions: 100}).cloneWithDefaults(); r.SubscribeBurst != 400 {
		t.Fatalf("SubscribeBurst %d for 100 subscriptions, want 400", r.SubscribeBurst)
	}
	if r, _ := (&Options{TenantMsgRate: 2.5}).cloneWithDefaults(); r.TenantMsgBurst != 3 {
		t.Fatalf("TenantMsgBurst %d for a rate of 2.5, want one second's worth, 3", r.TenantMsgBurst)
	}
	n, err := (*Options)(nil).cloneWithDefaults()
	if err != nil || n.PingInterval != 25*time.Second {
		t.Fatalf("nil options: %+v, %v", n, err)
	}
	s, err := New(&Options{AuthKey: make([]byte, 32), Logger: discard()})
	if err != nil {
		t.Fatalf("a 32-byte key: %v", err)
	}
	s.Close()
}
