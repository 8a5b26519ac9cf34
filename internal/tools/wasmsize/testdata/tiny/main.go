// A tiny program for wasmsize's test: strconv is linked, fmt is not.
package main

import (
	"os"
	"strconv"
)

func main() { os.Stdout.WriteString(strconv.Itoa(len(os.Args)) + "\n") }
