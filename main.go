//go:build !windows

// Command faultline runs a small, real streaming job on one machine and lets
// a person watch Flink-style fault tolerance at work. This file only starts
// the program: the commands are in internal/cli, the engine in runtime/,
// checkpoint/, restart/ and backend/, the terminal UI in tui/.
package main

import (
	"os"

	"github.com/faultline-dev/faultline/internal/cli"
)

func main() { os.Exit(cli.Execute(os.Args[1:])) }
