//go:build !js

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/wsready/wsready/server"
	"github.com/wsready/wsready/web"
)

func serve(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	addr := fs.String("addr", ":8080", "listen address")
	ping := fs.Duration("ping", time.Second, "server ping interval")
	feed := fs.Duration("feed", 250*time.Millisecond, "time between feed updates")
	slow := fs.Duration("slow", 8*time.Second, "reply delay while Slow replies is on")
	downtime := fs.Duration("restart-downtime", 4*time.Second, "how long Restart refuses new connections")
	origins := fs.String("origins", "", "comma-separated extra origin patterns allowed to open a WebSocket (same origin is always allowed)")
	verbose := fs.Bool("v", false, "debug logs")
	if err := fs.Parse(args); err != nil {
		return err
	}
	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	var patterns []string
	for _, p := range strings.Split(*origins, ",") {
		if p = strings.TrimSpace(p); p != "" {
			patterns = append(patterns, p)
		}
	}
	srv := server.New(&server.Options{
		PingInterval: *ping, FeedInterval: *feed, SlowReplyDelay: *slow,
		RestartDowntime: *downtime, OriginPatterns: patterns, Static: web.FS(), Logger: log,
	})
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		srv.Close()
		return fmt.Errorf("failed to listen: %w", err)
	}
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	log.Info("serving", "url", "http://"+displayAddr(ln.Addr()))
	select {
	case err := <-errc:
		srv.Close()
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	srv.Close() // closes WebSockets (hijacked, so Shutdown does not see them)
	if err := hs.Shutdown(shutdownCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func displayAddr(a net.Addr) string {
	s := a.String()
	if strings.HasPrefix(s, "[::]:") {
		return "localhost:" + strings.TrimPrefix(s, "[::]:")
	}
	return s
}
