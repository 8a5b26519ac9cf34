//go:build !js

// Command wsready serves the demo and its backend (serve) and runs the
// fleet simulator (sim).
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/wsready/wsready"
)

const usage = `usage: wsready <command> [flags]

commands:
  serve   the backend, the demo page and the WebAssembly client
  sim     the virtual-time fleet simulator
  storm   real clients through a Restart or a drain, against a real server
  nats    a NATS server with JetStream, embedded, for several serve -nats nodes
  version print the version

Run "wsready <command> -h" for a command's flags.
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "serve":
		err = serve(os.Args[2:])
	case "sim":
		err = runSim(os.Args[2:], os.Stdout)
	case "storm":
		err = runStorm(os.Args[2:], os.Stdout)
	case "nats":
		err = runNATS(os.Args[2:], os.Stdout)
	case "-h", "--help", "help":
		fmt.Print(usage)
		return
	case "version", "-version", "--version":
		fmt.Println("wsready", wsready.Version)
		return
	default:
		fmt.Fprintf(os.Stderr, "wsready: unknown command %q\n\n%s", os.Args[1], usage)
		os.Exit(2)
	}
	if errors.Is(err, flag.ErrHelp) {
		return // -h: the flag set printed its usage
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "wsready:", err)
		var ue *usageError
		if errors.As(err, &ue) {
			os.Exit(2) // the command line was refused, as for an unknown command
		}
		os.Exit(1)
	}
}

// usageError is a command line a command refuses (a flag that does not
// parse, or a value it does not accept): the process exits with 2, a
// failure while running with 1.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usagef(format string, a ...any) error { return &usageError{fmt.Errorf(format, a...)} }
