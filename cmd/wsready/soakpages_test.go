//go:build !js

package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The soak's Chromium pages: e2e/soakpages (a program of the e2e module,
// which holds chromedp; this module cannot import it) run as a process
// with the nodes' addresses. It writes the pages' history to its own file,
// which the runner appends to the soak's history before the check, and
// obeys freeze/thaw/final/quit on stdin, answering each with one line.

// soakPagesReply bounds the wait for one answer of soakpages (a CDP call
// on a loaded machine takes seconds; a final reads three pages).
const soakPagesReply = 60 * time.Second

// chromiumPath is e2e.ChromiumPath's lookup (the e2e module's; this one
// cannot import it).
func chromiumPath() (string, error) {
	for _, name := range []string{os.Getenv("CHROMIUM"), "chromium", "chromium-browser", "google-chrome"} {
		if name == "" {
			continue
		}
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", errors.New("chromium not found (make chromium)")
}

// soakPages is the running soakpages process.
type soakPages struct {
	cmd     *exec.Cmd
	path    string // its history file
	stdin   io.WriteCloser
	lines   chan string // its stdout, line by line; closed when it ends
	mu      sync.Mutex  // one command at a time
	stderr  *strings.Builder
	errMu   sync.Mutex
	exited  chan struct{}
	exitErr error
}

// startSoakPages builds soakpages in the e2e module and starts it: the two
// tabs on tabs (an http:// node address), the third page through a proxy
// that refuses upgrades in front of proxied. It returns once every page
// was READY.
func startSoakPages(t *testing.T, dir, tabs, proxied string, start time.Time) (*soakPages, error) {
	bin := filepath.Join(dir, "soakpages")
	build := exec.Command("go", "build", "-o", bin, "./soakpages")
	build.Dir = filepath.Join("..", "..", "e2e")
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("failed to build soakpages: %w: %s", err, out)
	}
	p := &soakPages{path: filepath.Join(dir, "pages.jsonl"), lines: make(chan string, 16), stderr: &strings.Builder{}, exited: make(chan struct{})}
	p.cmd = exec.Command(bin, "-node", tabs, "-proxied", proxied, "-history", p.path, "-start", strconv.FormatInt(start.UnixMilli(), 10))
	var err error
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		return nil, fmt.Errorf("failed to start soakpages: %w", err)
	}
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("failed to start soakpages: %w", err)
	}
	errOut, err := p.cmd.StderrPipe()
	if err != nil {
		return nil, fmt.Errorf("failed to start soakpages: %w", err)
	}
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("failed to start soakpages: %w", err)
	}
	var readers sync.WaitGroup
	readers.Add(2)
	go func() {
		defer readers.Done()
		defer close(p.lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
	}()
	go func() {
		defer readers.Done()
		sc := bufio.NewScanner(errOut)
		for sc.Scan() {
			p.errMu.Lock()
			if p.stderr.Len() < 4096 { // its own messages, no peer text; bounded
				p.stderr.WriteString(sc.Text() + "\n")
			}
			p.errMu.Unlock()
		}
	}()
	go func() {
		readers.Wait()
		p.exitErr = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(p.kill)
	if line, err := p.next(150 * time.Second); err != nil || line != "ready" {
		p.kill()
		return nil, fmt.Errorf("failed to see the pages READY (%q, %v): %s", line, err, p.stderrText())
	}
	return p, nil
}

func (p *soakPages) stderrText() string {
	p.errMu.Lock()
	defer p.errMu.Unlock()
	return p.stderr.String()
}

// next is soakpages's next line of stdout, within d.
func (p *soakPages) next(d time.Duration) (string, error) {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case line, ok := <-p.lines:
		if !ok {
			<-p.exited
			return "", fmt.Errorf("soakpages exited: %v", p.exitErr)
		}
		return line, nil
	case <-tm.C:
		return "", fmt.Errorf("no answer from soakpages in %v", d)
	}
}

// do sends one command and waits for its answer.
func (p *soakPages) do(cmd string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, err := io.WriteString(p.stdin, cmd+"\n"); err != nil {
		return fmt.Errorf("failed to send %q to soakpages: %w", cmd, err)
	}
	line, err := p.next(soakPagesReply)
	if err != nil {
		return fmt.Errorf("failed to %s: %w", cmd, err)
	}
	if !strings.HasPrefix(line, "ok ") {
		return fmt.Errorf("failed to %s: soakpages said %q", cmd, line)
	}
	return nil
}

// quit ends soakpages and waits for it (its history is complete then).
func (p *soakPages) quit() error {
	err := p.do("quit")
	p.stdin.Close()
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		p.kill()
		return errors.New("failed to quit soakpages within 30 s")
	}
	if err == nil && p.exitErr != nil {
		err = fmt.Errorf("soakpages ended badly: %w: %s", p.exitErr, p.stderrText())
	}
	return err
}

// kill ends soakpages at once (a test's cleanup; a no-op once it exited).
func (p *soakPages) kill() {
	select {
	case <-p.exited:
		return
	default:
	}
	p.cmd.Process.Kill()
	<-p.exited
}

// appendFile appends the file at from to the file at to.
func appendFile(to, from string) error {
	src, err := os.Open(from)
	if err != nil {
		return fmt.Errorf("failed to open the pages' history: %w", err)
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("failed to open the history: %w", err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return fmt.Errorf("failed to append the pages' history: %w", err)
	}
	if err := dst.Close(); err != nil {
		return fmt.Errorf("failed to append the pages' history: %w", err)
	}
	return nil
}
