//go:build !nodemo

package main

// embeddedCommands are the commands that embed servers of their own (a
// Temporal dev server, miniredis, go-mysql-server): the demo and the
// benchmark. The production image builds the starter with -tags nodemo,
// which leaves them and everything they import out (embedded_off.go).
func embeddedCommands() []command {
	return []command{
		{"bench", "measure the hot paths beside their ceilings; writes docs/bench", runBench},
		{"demo", "run a whole flash sale in this process (embedded services unless the env names real ones)", runDemo},
	}
}
