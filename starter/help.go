package main

import (
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/flashsale/flashsale/internal/backend"
)

// helpRequest is returned by a command asked for -h/--help: run prints
// text on stdout and exits 0, having connected to nothing.
type helpRequest struct{ text string }

func (h *helpRequest) Error() string { return "help requested" }

// isHelp reports whether arg asks for help.
func isHelp(arg string) bool {
	switch arg {
	case "-h", "-help", "--help", "help":
		return true
	}
	return false
}

// flagHelp is a command's usage: its flags with their defaults, then the
// environment every command reads.
func flagHelp(fs *flag.FlagSet) error {
	var b strings.Builder
	fmt.Fprintf(&b, "usage: starter %s [flags]\n", fs.Name())
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	if n > 0 {
		b.WriteString("\nflags:\n")
		fs.SetOutput(&b)
		fs.PrintDefaults()
	}
	b.WriteString("\n" + backend.EnvHelp)
	return &helpRequest{text: b.String()}
}

// subcommandHelp is the usage of a command made of subcommands (sku,
// reconcile).
func subcommandHelp(name string, subs ...string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "usage: starter %s %s [flags]\n\n", name, strings.Join(subs, "|"))
	for _, s := range subs {
		fmt.Fprintf(&b, "  starter %s %s --help   the flags of %s %s\n", name, s, name, s)
	}
	return &helpRequest{text: b.String()}
}

// showHelp prints a help request's text; it reports false for any other
// error.
func showHelp(err error, print func(string)) bool {
	var h *helpRequest
	if !errors.As(err, &h) {
		return false
	}
	print(h.text)
	return true
}
