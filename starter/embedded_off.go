//go:build nodemo

package main

// embeddedCommands: none in a starter built with -tags nodemo (the
// production image, Dockerfile): no demo, no benchmark, and none of the
// embedded servers they bring.
func embeddedCommands() []command { return nil }
