package app

import (
	"fmt"
	"net"
	"net/http"
	"time"
)

// CheckReady GETs /readyz of a process listening on addr and fails unless
// it answers 200: the -healthcheck of both commands, for container health
// checks (the image has no shell or curl). A wildcard listen address is
// reached on loopback.
func CheckReady(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("address %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	c := &http.Client{Timeout: 3 * time.Second}
	resp, err := c.Get("http://" + net.JoinHostPort(host, port) + "/readyz")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("/readyz answered %s", resp.Status)
	}
	return nil
}
