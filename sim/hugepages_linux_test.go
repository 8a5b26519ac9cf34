//go:build linux

package sim

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"
)

// A fleet of 2 MiB or more is advised for transparent huge pages: the
// mapping that holds it carries the kernel's "hg" flag (MADV_HUGEPAGE),
// whatever the system's THP setting makes of it.
func TestLargeFleetsAreAdvisedForHugePages(t *testing.T) {
	if _, err := os.Stat("/sys/kernel/mm/transparent_hugepage"); err != nil {
		t.Skip("this kernel has no transparent huge pages")
	}
	for scratchPool.Get() != nil { // a fleet of its own, not one a test before left
	}
	sc := getScratch(100_000, 20*time.Minute) // 4 MB of fleet
	flags, ok := vmFlags(t, uintptr(unsafe.Pointer(unsafe.SliceData(sc.fleet))))
	if !ok {
		t.Skip("/proc/self/smaps does not show the fleet's mapping")
	}
	if !strings.Contains(" "+flags+" ", " hg ") {
		t.Fatalf("the fleet's mapping is not advised for huge pages: VmFlags %q", flags)
	}
}

// vmFlags returns the VmFlags of the mapping that holds addr.
func vmFlags(t *testing.T, addr uintptr) (string, bool) {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return "", false
	}
	defer f.Close()
	in := false
	s := bufio.NewScanner(f)
	for s.Scan() {
		line := s.Text()
		if lo, hi, ok := strings.Cut(strings.Fields(line)[0], "-"); ok && !strings.HasSuffix(strings.Fields(line)[0], ":") {
			a, err1 := strconv.ParseUint(lo, 16, 64)
			b, err2 := strconv.ParseUint(hi, 16, 64)
			in = err1 == nil && err2 == nil && uint64(addr) >= a && uint64(addr) < b
			continue
		}
		if v, ok := strings.CutPrefix(line, "VmFlags:"); ok && in {
			return strings.TrimSpace(v), true
		}
	}
	return "", false
}
