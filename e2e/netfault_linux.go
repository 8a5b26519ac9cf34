//go:build linux

package e2e

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// netNSPrefix names every namespace and veth this file makes, followed by
// the test process's pid: removeStaleNetNS finds a crashed run's leftovers
// by it and leaves a live run's alone.
const netNSPrefix = "wsrnf"

// netNS is a network namespace of the test's own joined to the host by a
// veth pair: the server listens inside it (NSAddr), the clients (this
// process's native client, Chromium) dial it from the host side
// (HostAddr). The pair's addresses are link-local (169.254.0.0/16, a /30
// of its own): the host routes only that /30 to the veth, the namespace
// has no other interface but its loopback and no default route, and
// link-local addresses are never forwarded, so no packet to or from them
// leaves the pair. A blackhole is iptables DROP inside the namespace (the
// host's rules are never touched); a reset is ss -K there (SOCK_DESTROY:
// the kernel aborts the server's sockets and sends the client a RST).
type netNS struct {
	Name     string // the namespace, as ip netns names it
	hostIf   string // the host's end of the veth pair
	HostAddr string // the host end's address
	NSAddr   string // the namespace end's address: the server's
}

// netNSUsable says why this machine cannot make a netNS ("" when it can):
// the test must run as root with ip and iptables installed.
func netNSUsable() string {
	if os.Geteuid() != 0 {
		return "network namespaces need root"
	}
	for _, tool := range []string{"ip", "iptables", "ss"} {
		if _, err := exec.LookPath(tool); err != nil {
			return tool + " is not installed (Debian: apt-get install -y iproute2 iptables)"
		}
	}
	return ""
}

func run(name string, args ...string) error {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("failed to run %s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// removeStaleNetNS deletes the namespaces an earlier run of this suite
// left behind (killed before its cleanup ran): those named with the
// prefix and the pid of a process that no longer exists. Deleting a
// namespace deletes the veth end inside it, and with it the pair.
func removeStaleNetNS() {
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		return
	}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], netNSPrefix) {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimPrefix(f[0], netNSPrefix))
		if err != nil || pid == os.Getpid() {
			continue
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			run("ip", "netns", "del", f[0])
		}
	}
}

// newNetNS makes the namespace and the veth pair, both up; Close removes
// them. One per process at a time (the names carry the pid).
func newNetNS() (*netNS, error) {
	removeStaleNetNS()
	pid := os.Getpid()
	// A /30 per pid within 169.254.100.0-169.254.199.255: two runs at once
	// on one machine do not share one.
	third := 100 + pid%100
	n := &netNS{
		Name:     fmt.Sprintf("%s%d", netNSPrefix, pid),
		hostIf:   fmt.Sprintf("%sh%d", netNSPrefix, pid%1000000),
		HostAddr: fmt.Sprintf("169.254.%d.1", third),
		NSAddr:   fmt.Sprintf("169.254.%d.2", third),
	}
	nsIf := fmt.Sprintf("%sn%d", netNSPrefix, pid%1000000)
	if err := run("ip", "netns", "add", n.Name); err != nil {
		return nil, err
	}
	steps := [][]string{
		{"ip", "link", "add", n.hostIf, "type", "veth", "peer", "name", nsIf},
		{"ip", "link", "set", nsIf, "netns", n.Name},
		{"ip", "addr", "add", n.HostAddr + "/30", "dev", n.hostIf},
		{"ip", "link", "set", n.hostIf, "up"},
		{"ip", "netns", "exec", n.Name, "ip", "addr", "add", n.NSAddr + "/30", "dev", nsIf},
		{"ip", "netns", "exec", n.Name, "ip", "link", "set", nsIf, "up"},
		{"ip", "netns", "exec", n.Name, "ip", "link", "set", "lo", "up"},
	}
	for _, s := range steps {
		if err := run(s[0], s[1:]...); err != nil {
			n.Close()
			return nil, err
		}
	}
	return n, nil
}

// Close deletes the namespace (its iptables rules and the veth pair go
// with it) and the host's end of the pair should it still be there.
func (n *netNS) Close() error {
	err := run("ip", "netns", "del", n.Name)
	exec.Command("ip", "link", "del", n.hostIf).Run() // gone with the namespace already, normally
	return err
}

// Listen listens on a random TCP port of NSAddr, inside the namespace:
// the socket is made on a thread moved into the namespace, and stays
// there. That runs on a goroutine of its own, locked to its thread: the
// thread moves back after, and one that cannot is left locked when the
// goroutine ends, so the runtime ends the thread instead of reusing it.
func (n *netNS) Listen() (net.Listener, error) {
	type result struct {
		ln  net.Listener
		err error
	}
	done := make(chan result, 1)
	go func() {
		ln, err := n.listenHere()
		done <- result{ln, err}
	}()
	r := <-done
	return r.ln, r.err
}

// listenHere is Listen's work on the calling goroutine, which must end
// after it (it may leave the goroutine locked to its thread).
func (n *netNS) listenHere() (net.Listener, error) {
	runtime.LockOSThread()
	home, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
	if err != nil {
		runtime.UnlockOSThread()
		return nil, fmt.Errorf("failed to open this thread's network namespace: %w", err)
	}
	defer home.Close()
	target, err := os.Open("/var/run/netns/" + n.Name)
	if err != nil {
		runtime.UnlockOSThread()
		return nil, fmt.Errorf("failed to open namespace %s: %w", n.Name, err)
	}
	defer target.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return nil, fmt.Errorf("failed to enter namespace %s: %w", n.Name, err)
	}
	ln, lerr := net.Listen("tcp", net.JoinHostPort(n.NSAddr, "0"))
	if err := unix.Setns(int(home.Fd()), unix.CLONE_NEWNET); err != nil {
		if ln != nil {
			ln.Close()
		}
		return nil, fmt.Errorf("failed to leave namespace %s (the thread ends with its goroutine): %w", n.Name, err)
	}
	runtime.UnlockOSThread()
	if lerr != nil {
		return nil, fmt.Errorf("failed to listen in namespace %s: %w", n.Name, lerr)
	}
	return ln, nil
}

// blackholeRules are the rules Blackhole inserts and removes: every
// packet into and out of the namespace dropped, silently (no RST, no ICMP),
// as a dead link or a NAT that forgot the flow does.
var blackholeRules = [][]string{{"INPUT", "-j", "DROP"}, {"OUTPUT", "-j", "DROP"}}

// Blackhole turns the namespace's DROP rules on or off.
func (n *netNS) Blackhole(on bool) error {
	op := "-D"
	if on {
		op = "-I"
	}
	for _, r := range blackholeRules {
		if err := run("ip", append([]string{"netns", "exec", n.Name, "iptables", op}, r...)...); err != nil {
			return err
		}
	}
	return nil
}

// Reset aborts every established TCP socket in the namespace (the
// server's side of each connection): the kernel sends each peer a RST.
// It returns how many ss destroyed; a kernel without SOCK_DESTROY
// (CONFIG_INET_DIAG_DESTROY) destroys none and says so.
func (n *netNS) Reset() (int, error) {
	out, err := exec.Command("ip", "netns", "exec", n.Name, "ss", "-K", "-t", "-n", "-H", "state", "established").CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("failed to run ss -K in %s: %w: %s", n.Name, err, strings.TrimSpace(string(out)))
	}
	killed := 0
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, n.NSAddr) {
			killed++
		}
	}
	return killed, nil
}

// resetWorks says why Reset cannot reset a connection here ("" when it
// can): a TCP connection into the namespace, Reset, and the host's end
// must read an error (the RST) within 2 s.
func (n *netNS) resetWorks() string {
	ln, err := n.Listen()
	if err != nil {
		return err.Error()
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}()
	c, err := net.DialTimeout("tcp", ln.Addr().String(), 2*time.Second)
	if err != nil {
		return fmt.Sprintf("failed to dial into the namespace: %v", err)
	}
	defer c.Close()
	if s, ok := <-accepted; ok {
		defer s.Close()
	}
	killed, err := n.Reset()
	if err != nil {
		return err.Error()
	}
	c.SetReadDeadline(time.Now().Add(2 * time.Second))
	_, err = c.Read(make([]byte, 1))
	if killed == 0 || err == nil || errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, io.EOF) {
		return fmt.Sprintf("ss -K destroyed %d sockets and the peer read %v: the kernel lacks SOCK_DESTROY (CONFIG_INET_DIAG_DESTROY)", killed, err)
	}
	return ""
}
