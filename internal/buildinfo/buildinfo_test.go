package buildinfo

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestFrom(t *testing.T) {
	stamped := &debug.BuildInfo{
		GoVersion: "go1.26.8",
		Main:      debug.Module{Path: "github.com/flashsale/flashsale", Version: "(devel)"},
		Settings: []debug.BuildSetting{
			{Key: "vcs", Value: "git"},
			{Key: "vcs.revision", Value: "2058aa9c0ffee"},
			{Key: "vcs.time", Value: "2026-12-01T10:00:00Z"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	unstamped := &debug.BuildInfo{
		GoVersion: "go1.26.8",
		Main:      debug.Module{Path: "github.com/flashsale/flashsale", Version: "(devel)"},
	}
	tests := []struct {
		name              string
		bi                *debug.BuildInfo
		ok                bool
		version, revision string // link-time fallbacks
		want              Info
		line              string
	}{
		{
			name: "stamped by the toolchain: the stamp wins over the fallback",
			bi:   stamped, ok: true, revision: "from-ldflags",
			want: Info{Module: "github.com/flashsale/flashsale", Version: "(devel)", Revision: "2058aa9c0ffee",
				Time: "2026-12-01T10:00:00Z", Modified: true, Go: "go1.26.8"},
			line: "github.com/flashsale/flashsale (devel) revision 2058aa9c0ffee+modified committed 2026-12-01T10:00:00Z go1.26.8",
		},
		{
			name: "no VCS stamp (Docker without .git): the link-time revision and version",
			bi:   unstamped, ok: true, version: "v1.4.0", revision: "abc123",
			want: Info{Module: "github.com/flashsale/flashsale", Version: "v1.4.0", Revision: "abc123", Go: "go1.26.8"},
			line: "github.com/flashsale/flashsale v1.4.0 revision abc123 go1.26.8",
		},
		{
			name: "nothing known",
			bi:   unstamped, ok: true,
			want: Info{Module: "github.com/flashsale/flashsale", Version: "(devel)", Go: "go1.26.8"},
			line: "github.com/flashsale/flashsale (devel) revision unknown go1.26.8",
		},
		{
			name: "no build info at all",
			want: Info{Version: "(devel)"},
			line: "(devel) revision unknown",
		},
		{
			name: "a module version from go install mod@v: kept over the fallback",
			bi:   &debug.BuildInfo{Main: debug.Module{Path: "github.com/flashsale/flashsale", Version: "v1.2.3"}},
			ok:   true, version: "v9",
			want: Info{Module: "github.com/flashsale/flashsale", Version: "v1.2.3"},
			line: "github.com/flashsale/flashsale v1.2.3 revision unknown",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := From(tt.bi, tt.ok, tt.version, tt.revision)
			if got != tt.want {
				t.Fatalf("From = %+v, want %+v", got, tt.want)
			}
			if got.String() != tt.line {
				t.Fatalf("String = %q, want %q", got.String(), tt.line)
			}
			var b strings.Builder
			if err := got.Print(&b, "worker"); err != nil || b.String() != "worker "+tt.line+"\n" {
				t.Fatalf("Print = %q, %v", b.String(), err)
			}
		})
	}
}

// The test binary itself: Read never fails and names the module.
func TestRead(t *testing.T) {
	if got := Read(); got.Version == "" || got.Go == "" {
		t.Fatalf("Read = %+v", got)
	}
}
