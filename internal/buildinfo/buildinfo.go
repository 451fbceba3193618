// Package buildinfo says which build of flashsale a process is: the module
// version, the VCS revision it was built from and whether the tree had
// uncommitted changes. `api --version`, `worker --version` and
// `starter --version` print it, and the processes log it at start, so an
// operator can tell which build answered.
//
// The Go toolchain stamps the revision into the binary when it builds
// inside a git checkout (runtime/debug.ReadBuildInfo's vcs.* settings). A
// build without the repository (the Dockerfile copies the tree without
// .git) or with -buildvcs=false has none; there the revision comes from
// Revision, set at link time:
//
//	go build -ldflags "-X github.com/flashsale/flashsale/internal/buildinfo.Revision=$(git rev-parse HEAD)" ./worker
package buildinfo

import (
	"fmt"
	"io"
	"runtime/debug"
	"strings"
)

// Revision and Version are the link-time fallbacks (-ldflags -X) for a
// build without VCS stamping or without a module version (a build of the
// main module is "(devel)"). The toolchain's stamp wins when it has one:
// it cannot disagree with the tree that was compiled.
var (
	Revision string
	Version  string
)

// Info is one build's identity.
type Info struct {
	Module   string `json:"module"`   // the main module's path
	Version  string `json:"version"`  // module version, "(devel)" for a local build
	Revision string `json:"revision"` // VCS revision, "" when unknown
	Time     string `json:"time,omitempty"`
	Modified bool   `json:"modified"` // the tree had uncommitted changes
	Go       string `json:"go"`       // the toolchain
}

// Read returns the running binary's Info.
func Read() Info {
	bi, ok := debug.ReadBuildInfo()
	return From(bi, ok, Version, Revision)
}

// From builds Info out of a build's debug.BuildInfo (ok false: none was
// embedded) and the link-time fallbacks.
func From(bi *debug.BuildInfo, ok bool, version, revision string) Info {
	info := Info{Version: "(devel)"}
	if ok && bi != nil {
		info.Module, info.Go = bi.Main.Path, bi.GoVersion
		if bi.Main.Version != "" {
			info.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				info.Revision = s.Value
			case "vcs.time":
				info.Time = s.Value
			case "vcs.modified":
				info.Modified = s.Value == "true"
			}
		}
	}
	if info.Revision == "" {
		info.Revision = revision
	}
	if info.Version == "(devel)" && version != "" {
		info.Version = version
	}
	return info
}

// String is the one line --version prints: module, version, revision
// ("unknown" without one, "+modified" for a dirty tree), commit time and
// toolchain.
func (i Info) String() string {
	rev := i.Revision
	if rev == "" {
		rev = "unknown"
	}
	if i.Modified {
		rev += "+modified"
	}
	var parts []string
	if i.Module != "" {
		parts = append(parts, i.Module)
	}
	parts = append(parts, i.Version, "revision "+rev)
	if i.Time != "" {
		parts = append(parts, "committed "+i.Time)
	}
	if i.Go != "" {
		parts = append(parts, i.Go)
	}
	return strings.Join(parts, " ")
}

// Print writes String for the command named cmd, as --version does.
func (i Info) Print(w io.Writer, cmd string) error {
	_, err := fmt.Fprintln(w, cmd, i.String())
	return err
}

// LogAttrs are the fields a process's "started" log line carries.
func (i Info) LogAttrs() []any {
	return []any{"version", i.Version, "revision", i.Revision, "modified", i.Modified}
}
