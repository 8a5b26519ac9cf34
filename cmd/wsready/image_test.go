//go:build linux

package main

import (
	"context"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wsready/wsready/client/native"
	"github.com/wsready/wsready/internal/poll"
)

// The image docs/deploy/Dockerfile describes, built with podman from the
// static binary alone (FROM scratch: nothing is pulled), then run against
// the smoke check: /healthz, the embedded client and a client reaching
// READY. Podman missing skips the test, and podman unable to run a
// container on this machine skips the run, each with the reason.
func TestImage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and an image")
	}
	if _, err := exec.LookPath("podman"); err != nil {
		t.Skip("podman is not installed (apt-get install podman): the image is not built")
	}
	// The binary as make image builds it: CGO_ENABLED=0.
	dir := t.TempDir()
	bin := filepath.Join(dir, "wsready")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s", "-o", bin, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	tag := "localhost/wsready-test:" + strconv.Itoa(os.Getpid())
	dockerfile, err := filepath.Abs("../../docs/deploy/Dockerfile") // podman takes a relative -f against the context too
	if err == nil {
		_, err = os.Stat(dockerfile) // podman's own error names a path under the context
	}
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("podman", "build", "-q", "-f", dockerfile, "-t", tag, dir).CombinedOutput(); err != nil {
		t.Fatalf("podman build: %v\n%s", err, out)
	}
	t.Cleanup(func() { exec.Command("podman", "rmi", "-f", tag).Run() })
	t.Run("static binary alone", func(t *testing.T) { imageIsTheBinaryAlone(t, tag, bin) })
	t.Run("binary serves", func(t *testing.T) { binaryServes(t, bin) })
	t.Run("serves", func(t *testing.T) { imageServes(t, tag) })
}

// The image is the one static file and its settings: nothing to pull,
// no libc to find, not root.
func imageIsTheBinaryAlone(t *testing.T, tag, bin string) {
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("the binary names a dynamic loader: it would not start FROM scratch")
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("the binary needs shared libraries %v: it would not start FROM scratch", libs)
	}
	out, err := exec.Command("podman", "image", "inspect", tag).Output()
	if err != nil {
		t.Fatal(err)
	}
	var got []struct {
		Size   int64
		Config struct {
			User       string
			Entrypoint []string
			Cmd        []string
		}
		RootFS struct{ Layers []string }
	}
	if err := json.Unmarshal(out, &got); err != nil || len(got) != 1 {
		t.Fatalf("podman image inspect: %v: %s", err, out)
	}
	img := got[0]
	if img.Config.User != "65532:65532" {
		t.Errorf("user %q, want 65532:65532 (numeric, not root)", img.Config.User)
	}
	if strings.Join(img.Config.Entrypoint, " ") != "/wsready" || strings.Join(img.Config.Cmd, " ") != "serve -addr 0.0.0.0:8080" {
		t.Errorf("entrypoint %q cmd %q, want /wsready and serve -addr 0.0.0.0:8080", img.Config.Entrypoint, img.Config.Cmd)
	}
	if len(img.RootFS.Layers) != 1 {
		t.Errorf("%d layers, want 1 (the binary)", len(img.RootFS.Layers))
	}
	st, err := os.Stat(bin)
	if err != nil {
		t.Fatal(err)
	}
	// The one layer is the binary plus tar headers: within 64 KiB of it.
	if d := img.Size - st.Size(); d < 0 || d > 64<<10 {
		t.Errorf("image %d bytes, binary %d: the image holds more than the binary", img.Size, st.Size())
	}
}

// The image runs as a server: /healthz says ok and a client reaches
// READY over a real socket (host network, loopback).
func imageServes(t *testing.T, tag string) {
	opts, err := runOptions(tag)
	if err != nil {
		t.Skipf("podman cannot run a container on this machine (the image was built and checked): %v", err)
	}
	t.Logf("podman run %s", strings.Join(opts, " "))
	addr := freeAddr(t)
	name := "wsready-test-" + strconv.Itoa(os.Getpid())
	run := exec.Command("podman", append(append([]string{"run", "--rm", "--pull=never", "--network=host", "--name", name}, opts...), tag, "serve", "-addr", addr, "-ping", "1s")...)
	run.Stdout, run.Stderr = io.Discard, io.Discard
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- run.Wait() }()
	t.Cleanup(func() {
		exec.Command("podman", "rm", "-f", "-t", "0", name).Run()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			run.Process.Kill()
			<-done
		}
	})
	smoke(t, addr, "the container")
}

// runOptions are the options podman run needs here to start the image
// (none, where podman works as it ships), found by running its version
// command. A sandbox that forbids raising a hard limit refuses podman's
// defaults: crun and runc fail to set RLIMIT_NOFILE and RLIMIT_NPROC
// (nproc's default, 32768, is above what the sandbox lets the runtime set),
// and crun then fails on hybrid cgroups. runc with the limits this
// process has (open files) and 4,096 processes, both at or below the
// host's, runs it. An error says why neither did; it is the OCI runtime's
// (the machine), not the image's: any other failure is a test failure.
func runOptions(tag string) ([]string, error) {
	try := func(opts ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, "podman", append(append([]string{"run", "--rm", "--pull=never", "--network=host"}, opts...), tag, "version")...).CombinedOutput()
		if err == nil && !strings.Contains(string(out), "wsready") {
			err = errors.New("no version printed")
		}
		return strings.TrimSpace(string(out)), err
	}
	out, err := try()
	if err == nil {
		return nil, nil
	}
	if !strings.Contains(out, "OCI") {
		return nil, fmt.Errorf("podman run %s version: %w: %s", tag, err, out)
	}
	first := fmt.Errorf("%w: %s", err, out)
	if _, err := exec.LookPath("runc"); err != nil {
		return nil, fmt.Errorf("%w (and runc, which runs it with lower limits, is not installed)", first)
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return nil, first
	}
	opts := []string{"--runtime", "runc", "--ulimit", fmt.Sprintf("nofile=%d:%d", lim.Cur, lim.Cur), "--ulimit", "nproc=4096:4096"}
	if out, err := try(opts...); err != nil {
		return nil, fmt.Errorf("%w; with %s: %w: %s", first, strings.Join(opts, " "), err, out)
	}
	return opts, nil
}

// The image's binary serves outside a container too: where podman cannot
// run one, this is the smoke check of what the image holds.
func binaryServes(t *testing.T, bin string) {
	addr := freeAddr(t)
	cmd := exec.Command(bin, "serve", "-addr", addr, "-ping", "1s")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	smoke(t, addr, "the static binary")
}

// smoke is the smoke check: /healthz says ok, the browser client is
// embedded (GET /wsready.wasm), and a native client reaches READY.
func smoke(t *testing.T, addr, what string) {
	t.Helper()
	var health string
	poll.UntilEvery(20*time.Second, 200*time.Millisecond, func() bool {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err != nil {
			return false
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		health = strings.TrimSpace(string(b))
		return resp.StatusCode == http.StatusOK
	})
	if health != "ok" {
		t.Fatalf("/healthz of %s said %q, want ok", what, health)
	}
	resp, err := http.Get("http://" + addr + "/wsready.wasm")
	if err != nil {
		t.Fatal(err)
	}
	n, _ := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || n < 1<<20 {
		t.Errorf("GET /wsready.wasm of %s: %d, %d bytes; want the embedded client (over 1 MiB)", what, resp.StatusCode, n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := native.Dial(ctx, "ws://"+addr+"/ws", &native.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.WaitReady(ctx); err != nil {
		t.Fatalf("a client of %s never reached READY: %v", what, err)
	}
}
