package main

import "io"

func runSim(args []string, w io.Writer) error { return nil }
