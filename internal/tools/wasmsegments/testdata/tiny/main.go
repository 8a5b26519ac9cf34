// A tiny program for wasmsegments' test: it prints what its data holds (a
// string table, a map built at init) and what a stack trace needs (the
// runtime's function tables, among them findfunctab: a panic's trace finds
// the functions by their program counters).
package main

import (
	"os"
	"runtime"
	"strconv"
)

var days = map[string]int{"mon": 1, "tue": 2, "wed": 3, "thu": 4, "fri": 5, "sat": 6, "sun": 7}

//go:noinline
func where() string {
	pc, _, line, _ := runtime.Caller(0)
	return runtime.FuncForPC(pc).Name() + ":" + strconv.Itoa(line)
}

func main() {
	os.Stdout.WriteString(strconv.Itoa(days["wed"]+days["sun"]) + " " + where() + "\n")
}
