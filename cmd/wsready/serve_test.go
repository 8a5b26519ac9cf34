//go:build !js

package main

import (
	"strings"
	"testing"
)

// Flags mean what they say: a zero or negative bound, or a stray argument,
// is refused before anything listens.
func TestServeRefusesInvalidFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-max-conns", "0"}, {"-max-conns-per-ip", "-1"}, {"-max-queued-bytes", "0"}, {"-max-pending-replies", "0"},
		{"-write-timeout", "0s"}, {"-message-timeout", "-1s"}, {"-ping", "0s"}, {"-ping", "2h"}, {"-feed", "0s"},
		{"-addr", "nope"}, {"extra"}, {"-auth", "maybe"}, {"-auth-key-file", "/nonexistent"}, {"-ticket-life", "0s"}, {"-rejection-threshold", "0"},
		{"-admit-rate", "0"}, {"-tenant-rate", "-1"}, {"-admit-burst", "0"}, {"-refuse", "drop"}, {"-sweep-interval", "0s"}, {"-drain-window", "0s"},
	} {
		err := serve(args)
		if err == nil || !strings.Contains(err.Error(), "serve") && !strings.Contains(err.Error(), "addr") {
			t.Errorf("serve %v: %v", args, err)
		}
	}
}
