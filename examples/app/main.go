//go:build !js

// The example application (docs/app.md): a small web shop with its own
// login that embeds wsready at /realtime. make app builds its page and runs
// it at http://127.0.0.1:8090.
//
//	go run ./examples/app [-addr 127.0.0.1:8090] [-static examples/app/web/dist]
//	                      [-session-key-file F] [-tokens cookie|ticket|jwt] [-jwt-life 1m] [-hosts a,b]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/wsready/wsready/examples/app/app"
)

func main() {
	if err := run(os.Args[1:], os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "app:", err)
		os.Exit(1)
	}
}

func run(args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("app", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:8090", "the address to listen on (loopback by default)")
	static := fs.String("static", "examples/app/web/dist", "the built page (make app builds it)")
	keyFile := fs.String("session-key-file", "", "a file of at least 32 bytes that signs the session cookies (default: a random key, so logins end with the process)")
	tokens := fs.String("tokens", app.TokensCookie, "what the page's client authenticates with: cookie (the session cookie on the upgrade, through the Identify hook; no token), ticket (wsready's, through the Authenticate hook) or jwt (HS256 JWTs the app mints)")
	jwtLife := fs.Duration("jwt-life", time.Minute, "how long a JWT lives with -tokens jwt (above 0, at most 24h)")
	hosts := fs.String("hosts", "", "comma-separated host names clients use besides loopback's")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	if _, err := os.Stat(*static + "/index.html"); err != nil {
		return fmt.Errorf("failed to find the page in %s (build it with make app): %w", *static, err)
	}
	cfg := app.Config{Static: os.DirFS(*static), Tokens: *tokens, Logger: slog.New(slog.NewTextHandler(stderr, nil))}
	if *tokens == app.TokensJWT {
		cfg.JWTLife = *jwtLife
	} else if flagSet(fs, "jwt-life") {
		return errors.New("-jwt-life is for -tokens jwt")
	}
	if *keyFile != "" {
		key, err := os.ReadFile(*keyFile)
		if err != nil {
			return fmt.Errorf("failed to read the session key: %w", err)
		}
		cfg.SessionKey = key
	}
	if *hosts != "" {
		cfg.AllowedHosts = strings.Split(*hosts, ",")
	}
	a, err := app.New(cfg)
	if err != nil {
		return err
	}
	defer a.Close()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("failed to listen: %w", err)
	}
	hs := a.HTTPServer()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		a.Close() // the realtime connections close with 1001 (hijacked: Shutdown does not wait for them)
		hs.Shutdown(sctx)
	}()
	cfg.Logger.Info("app listening", "url", "http://"+ln.Addr().String(), "tokens", cfg.Tokens)
	if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("failed to serve: %w", err)
	}
	return nil
}

// flagSet reports whether name was given on the command line.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
