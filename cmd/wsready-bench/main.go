//go:build !js

// Command wsready-bench is make bench: it measures the wsready server beside
// two servers doing the same work on this machine, in the same run, and the
// simulator against the published Python fleet model, and writes
// docs/bench.md and docs/bench.json.
//
//	go run ./cmd/wsready-bench run [-conns 10000] [-connect 19000] [-steady 10s]
//	    [-idle 19500] [-idle-window 60s] [-sse 5000] [-trials 3] [-model PATH] [-out docs]
//	    [-only idle|connect [-profile DIR]]
//	go run ./cmd/wsready-bench sim [-trials 3] [-model PATH] [-json FILE]
//	go run ./cmd/wsready-bench sse [-conns 2000] [-steady 10s] [-trials 3] [-json FILE]
//
// The servers: wsready (package server), the lean baseline (lean.go: the
// least a coder/websocket server can do) and centrifuge (the library a Go
// team would pick instead; built from ./centrifuge, a module of its own so
// the library module never depends on it). Each runs in a process of its
// own, so its RSS is its own; the clients run in other processes (at most
// 9,000 connections each: the machine allows 20,000 descriptors per
// process) from several loopback source addresses. The subcommands server
// and clients are those children: the harness runs itself again.
//
// It is a command of its own rather than "wsready bench" so that the
// product binary carries no load generator, no baseline server and no need
// for a Go toolchain (the harness builds the wsready binary and the
// centrifuge peer with go build).
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
)

const usage = `usage: wsready-bench <command> [flags]

commands:
  run      the benchmark: every server, the idle row, the simulator (make bench)
  sim      the simulator beside the Python model alone: -model PATH [-trials 3]
  sse      the HTTP transport's row alone: SSE beside WebSocket on wsready [-conns 2000]
  server   a server child: -kind wsready or lean (run starts it)
  clients  a clients child: n connections that count what they receive (run starts it)

Run "wsready-bench <command> -h" for a command's flags.
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "run":
		err = runBench(os.Args[2:])
	case "sim":
		err = runSimOnly(os.Args[2:])
	case "sse":
		err = runSSEOnly(os.Args[2:])
	case "server":
		err = runServer(os.Args[2:])
	case "clients":
		err = runClients(os.Args[2:])
	case "-h", "--help", "help":
		fmt.Print(usage)
		return
	default:
		fmt.Fprintf(os.Stderr, "wsready-bench: unknown command %q\n\n%s", os.Args[1], usage)
		os.Exit(2)
	}
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "wsready-bench:", err)
		var ue *usageError
		if errors.As(err, &ue) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

// usageError is a command line the harness refuses: exit code 2, as for an
// unknown command; a failure while measuring exits with 1.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usagef(format string, a ...any) error { return &usageError{fmt.Errorf(format, a...)} }
