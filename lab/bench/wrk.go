package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// ErrNoWrk is returned when wrk is not installed: the bench needs an
// external load generator to say how much of the Go one's figure is the Go
// client measuring itself.
var ErrNoWrk = errors.New("wrk not found on PATH: install it (Debian: apt-get install -y wrk)")

// CheckWrk fails with ErrNoWrk when wrk is not installed.
func CheckWrk() error {
	if _, err := exec.LookPath("wrk"); err != nil {
		return ErrNoWrk
	}
	return nil
}

// WrkOptions is one wrk run.
type WrkOptions struct {
	Name        string
	URL         string
	Threads     int
	Connections int
	Duration    time.Duration
	// Body is POSTed with each request; Headers are rotated request by
	// request (a crowd of buyers with their own tokens), Header[i] being
	// "Name: value" lines.
	Body    string
	Headers [][]string
}

// WrkScript renders the Lua script that makes wrk POST Body with the
// rotating headers. Strings are written as Lua long brackets so no escaping
// of quotes or backslashes is needed.
func WrkScript(body string, headers [][]string) string {
	var b strings.Builder
	b.WriteString("local body = " + luaString(body) + "\nlocal sets = {\n")
	for _, hs := range headers {
		b.WriteString("  {")
		for _, h := range hs {
			k, v, _ := strings.Cut(h, ":")
			fmt.Fprintf(&b, "[ %s ] = %s, ", luaString(strings.TrimSpace(k)), luaString(strings.TrimSpace(v)))
		}
		b.WriteString("[\"Content-Type\"] = \"application/json\"},\n")
	}
	b.WriteString(`}
if #sets == 0 then sets = {{["Content-Type"] = "application/json"}} end
local i = 0
request = function()
  i = i + 1
  return wrk.format("POST", nil, sets[(i % #sets) + 1], body)
end
`)
	return b.String()
}

func luaString(s string) string {
	level := ""
	for strings.Contains(s, "]"+level+"]") {
		level += "="
	}
	return "[" + level + "[" + s + "]" + level + "]"
}

// Wrk runs wrk once and reads its summary: requests/s, latency
// percentiles (--latency), and answers that were not 2xx/3xx (for a path
// that answers 409, every one; for hello world, none) and socket errors.
type WrkResult struct {
	Stat
	Non2xx       int64 `json:"non_2xx"`
	SocketErrors int64 `json:"socket_errors"`
}

// Wrk runs wrk with o and returns its figures as a Stat.
func Wrk(ctx context.Context, o WrkOptions) (WrkResult, error) {
	bin, err := exec.LookPath("wrk")
	if err != nil {
		return WrkResult{}, ErrNoWrk
	}
	if o.URL == "" {
		return WrkResult{}, errors.New("wrk: no URL")
	}
	dir, err := os.MkdirTemp("", "flashsale-wrk-")
	if err != nil {
		return WrkResult{}, fmt.Errorf("wrk script: %w", err)
	}
	defer os.RemoveAll(dir)
	script := filepath.Join(dir, "post.lua")
	if err := os.WriteFile(script, []byte(WrkScript(o.Body, o.Headers)), 0o644); err != nil {
		return WrkResult{}, fmt.Errorf("wrk script: %w", err)
	}
	secs := max(1, int(o.Duration.Round(time.Second)/time.Second))
	cmd := exec.CommandContext(ctx, bin, "-t", strconv.Itoa(max(1, o.Threads)), "-c", strconv.Itoa(max(1, o.Connections)),
		"-d", strconv.Itoa(secs)+"s", "--timeout", "10s", "--latency", "-s", script, o.URL)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return WrkResult{}, fmt.Errorf("wrk %s: %w\n%s", o.Name, err, out)
	}
	r, err := ParseWrk(string(out))
	if err != nil {
		return WrkResult{}, fmt.Errorf("wrk %s: %w\n%s", o.Name, err, out)
	}
	r.Name = o.Name
	return r, nil
}

var (
	wrkRPS      = regexp.MustCompile(`(?m)^Requests/sec:\s+([\d.]+)`)
	wrkTotal    = regexp.MustCompile(`(?m)^\s*(\d+) requests in ([\d.]+)(us|ms|s|m)`)
	wrkPct      = regexp.MustCompile(`(?m)^\s+(50|75|90|99)(?:\.000)?%\s+([\d.]+)(us|ms|s|m)\s*$`)
	wrkNon2xx   = regexp.MustCompile(`(?m)^\s*Non-2xx or 3xx responses:\s+(\d+)`)
	wrkSocketEr = regexp.MustCompile(`(?m)^\s*Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)`)
)

// ParseWrk reads wrk's text summary (run with --latency).
func ParseWrk(out string) (WrkResult, error) {
	var r WrkResult
	m := wrkRPS.FindStringSubmatch(out)
	if m == nil {
		return r, errors.New("no Requests/sec line")
	}
	r.PerSec, _ = strconv.ParseFloat(m[1], 64)
	if m := wrkTotal.FindStringSubmatch(out); m != nil {
		r.Ops, _ = strconv.ParseInt(m[1], 10, 64)
		r.Seconds = durationMs(m[2], m[3]) / 1000
	}
	found := 0
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		m := wrkPct.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		v := durationMs(m[2], m[3])
		switch m[1] {
		case "50":
			r.P50ms, found = v, found+1
		case "99":
			r.P99ms, found = v, found+1
		}
	}
	if found < 2 {
		return r, errors.New("no latency distribution (run with --latency)")
	}
	if m := wrkNon2xx.FindStringSubmatch(out); m != nil {
		r.Non2xx, _ = strconv.ParseInt(m[1], 10, 64)
	}
	if m := wrkSocketEr.FindStringSubmatch(out); m != nil {
		for _, s := range m[1:] {
			n, _ := strconv.ParseInt(s, 10, 64)
			r.SocketErrors += n
		}
	}
	return r, nil
}

func durationMs(v, unit string) float64 {
	f, _ := strconv.ParseFloat(v, 64)
	switch unit {
	case "us":
		return f / 1000
	case "s":
		return f * 1000
	case "m":
		return f * 60000
	}
	return f
}
