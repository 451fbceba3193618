//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package devstack

// lockFile is a no-op where flock is missing: two demos building the
// embedded MySQL at the same moment may then race, which a retry fixes.
func lockFile(string) (func(), error) { return func() {}, nil }
