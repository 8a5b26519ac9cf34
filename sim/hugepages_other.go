//go:build !linux

package sim

import "unsafe"

// adviseHugePages is Linux's (hugepages_linux.go); elsewhere the kernel
// decides alone.
func adviseHugePages(unsafe.Pointer, uintptr) {}
