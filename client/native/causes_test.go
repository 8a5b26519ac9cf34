//go:build !js

package native

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/wsready/wsready/server"
	"github.com/wsready/wsready/server/demo"
)

// Errors that name their cause, against the real server on loopback.

// A token hook's own error is wrapped in WaitReady's: errors.Is finds it
// and the message carries it (it read "could not get a token").
func TestWaitReadyWrapsTheTokenHooksError(t *testing.T) {
	_, _, url := authServer(t, server.Options{}, demo.Options{NoFeed: true})
	errHook := errors.New("the identity provider said 503")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Dial(ctx, url, &Options{Config: fastStage7(31), Token: func(context.Context, bool) (string, error) { return "", errHook }})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	short, stop := context.WithTimeout(ctx, time.Second)
	defer stop()
	err = c.WaitReady(short)
	t.Logf("WaitReady: %v", err)
	if !errors.Is(err, errHook) || !strings.Contains(err.Error(), "the identity provider said 503") || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitReady with a failing token hook: %v; want the hook's error wrapped", err)
	}
}

// A client with no token hook on a server that requires one: the server
// sends nothing until a token comes, and the error says so rather than
// "the server stopped answering".
func TestNoTokenHookOnAnAuthServerSaysSo(t *testing.T) {
	_, _, url := authServer(t, server.Options{}, demo.Options{NoFeed: true})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Dial(ctx, url, &Options{Config: fastStage7(32)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	short, stop := context.WithTimeout(ctx, 1500*time.Millisecond)
	defer stop()
	err = c.WaitReady(short)
	t.Logf("WaitReady: %v", err)
	if err == nil || !strings.Contains(err.Error(), "token hook") || strings.Contains(err.Error(), "stopped answering") {
		t.Fatalf("WaitReady with no token hook on an auth-required server: %v; want it to point at the token hook", err)
	}
}

// A token the server refuses ends the session (forbidden): the error
// carries the server's reason ("bad ticket"), not only the close code.
func TestABadTokenSaysSo(t *testing.T) {
	_, _, url := authServer(t, server.Options{}, demo.Options{NoFeed: true})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Dial(ctx, url, &Options{Config: fastStage7(33), Token: func(context.Context, bool) (string, error) { return "not.a-ticket", nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	err = c.WaitReady(ctx)
	t.Logf("WaitReady: %v", err)
	var ee *EndedError
	if !errors.As(err, &ee) || ee.Code != 4003 || !strings.Contains(err.Error(), "bad") {
		t.Fatalf("WaitReady with a refused token: %v; want an *EndedError with the server's reason", err)
	}
}
