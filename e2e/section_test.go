//go:build !js

package e2e

import (
	"os"
	"strings"
	"testing"
)

// The network faults' section lands after the stage 8 section (or the
// page load one), is replaced in place by the next run, and TestMeasure
// alone keeps it.
func TestWriteSectionNetFaults(t *testing.T) {
	path := t.TempDir() + "/measurements.md"
	s8 := stage8Begin + "\ns8\n" + stage8End
	base := "# M\n\n" + loadBegin + "\nload\n" + loadEnd + "\n\n" + s8 + "\n\nFreeze detection over short freezes x\n"
	if err := os.WriteFile(path, []byte(base), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, sec := range []string{"## Net\n\nfirst\n", "## Net\n\nsecond\n"} {
		if err := writeSection(path, netFaultsBegin, netFaultsEnd, sec); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	net := netFaultsBegin + "\n## Net\n\nsecond\n" + netFaultsEnd
	want := "# M\n\n" + loadBegin + "\nload\n" + loadEnd + "\n\n" + s8 + "\n\n" + net + "\n\nFreeze detection over short freezes x\n"
	if string(got) != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	dir := t.TempDir()
	if err := os.WriteFile(dir+"/measurements.md", got, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := (Report{Command: "make measure"}).Write(dir); err != nil {
		t.Fatal(err)
	}
	kept, err := os.ReadFile(dir + "/measurements.md")
	if err != nil {
		t.Fatal(err)
	}
	k := string(kept)
	if i, j := strings.Index(k, s8), strings.Index(k, net); i < 0 || j < i {
		t.Fatalf("TestMeasure's rewrite lost the network faults' section or its order:\n%s", k)
	}
	// Neither of the other sections there: at the end.
	bare := t.TempDir() + "/m.md"
	if err := os.WriteFile(bare, []byte("# M\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := writeSection(bare, netFaultsBegin, netFaultsEnd, "n"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(bare); string(b) != "# M\n\n"+netFaultsBegin+"\nn\n"+netFaultsEnd+"\n" {
		t.Fatalf("bare file: %q", b)
	}
}
