package flashsale_test

import (
	"bufio"
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// envName is the shape of an environment variable's name.
var envName = regexp.MustCompile(`^[A-Z][A-Z0-9]*(_[A-Z0-9]+)+_?$`)

// TestConfigurationPageMatchesTheCode holds docs/configuration.md to the
// code: every environment variable the product's Go source reads (and the
// Temporal SDK's envconfig, which reads the client's variables for us)
// has a row in the page, and every row names a variable something reads.
// A variable added to the code without a line in the page, or a page line
// left behind by a removed one, fails here instead of misleading an
// operator.
func TestConfigurationPageMatchesTheCode(t *testing.T) {
	code := envReadByProduct(t, ".")
	for _, name := range envReadBySDK(t) {
		code[name] = "go.temporal.io/sdk/contrib/envconfig"
	}
	page, dup := envOnPage(t, "docs/configuration.md")
	for _, name := range dup {
		t.Errorf("docs/configuration.md lists %s more than once", name)
	}
	for name, where := range code {
		if !slices.Contains(page, name) {
			t.Errorf("%s is read by %s but missing from docs/configuration.md", name, where)
		}
	}
	for _, name := range page {
		if _, ok := code[name]; !ok {
			t.Errorf("docs/configuration.md lists %s, which no code reads", name)
		}
	}
}

// envReadByProduct returns the variables the module rooted at root reads,
// each with the file that reads it: the string (literal or constant) given
// as the first argument to a function whose name says it reads the
// environment (os.Getenv, LookupEnv, a getenv parameter, config's str), and
// the elements of internal/config's lists of variables (pathVars,
// boolVars). Files are those a default build compiles; nested modules (the
// lab) are theirs to document.
func envReadByProduct(t *testing.T, root string) map[string]string {
	t.Helper()
	fset := token.NewFileSet()
	var files []*ast.File
	paths := map[*ast.File]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			if path != root {
				if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
					return filepath.SkipDir
				}
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		if ok, err := build.Default.MatchFile(filepath.Dir(path), d.Name()); err != nil || !ok {
			return err
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files = append(files, f)
		paths[f] = path
		return nil
	})
	if err != nil {
		t.Fatalf("walk the module: %v", err)
	}

	// String constants by name, so os.Getenv(metrics.AddrEnv) and
	// getenv(envRedisAddr, ...) count as reads of their values.
	consts := map[string][]string{}
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			if spec, ok := n.(*ast.ValueSpec); ok {
				for i, name := range spec.Names {
					if i < len(spec.Values) {
						if s, ok := stringLit(spec.Values[i]); ok {
							consts[name.Name] = append(consts[name.Name], s)
						}
					}
				}
			}
			return true
		})
	}
	values := func(e ast.Expr) []string {
		if s, ok := stringLit(e); ok {
			return []string{s}
		}
		switch e := e.(type) {
		case *ast.Ident:
			return consts[e.Name]
		case *ast.SelectorExpr:
			return consts[e.Sel.Name]
		}
		return nil
	}

	read := map[string]string{}
	add := func(f *ast.File, names []string) {
		for _, n := range names {
			if envName.MatchString(n) {
				read[n] = paths[f]
			}
		}
	}
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CallExpr:
				if readsEnv(n.Fun) && len(n.Args) > 0 {
					add(f, values(n.Args[0]))
				}
			case *ast.ValueSpec:
				for i, name := range n.Names {
					if !strings.HasSuffix(name.Name, "Vars") || i >= len(n.Values) {
						continue
					}
					if lit, ok := n.Values[i].(*ast.CompositeLit); ok {
						for _, elt := range lit.Elts {
							add(f, values(elt))
						}
					}
				}
			}
			return true
		})
	}
	return read
}

// readsEnv tells whether a call's function is, by its name, a read of the
// environment.
func readsEnv(fun ast.Expr) bool {
	var name string
	switch fun := fun.(type) {
	case *ast.Ident:
		name = fun.Name
	case *ast.SelectorExpr:
		name = fun.Sel.Name
	default:
		return false
	}
	lower := strings.ToLower(name)
	return name == "str" || lower == "getenv" || lower == "lookupenv"
}

func stringLit(e ast.Expr) (string, bool) {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(lit.Value)
	return s, err == nil
}

// envReadBySDK returns the variables the Temporal SDK's envconfig reads
// (the process hands it the environment): the TEMPORAL_ strings of its
// source, a prefix such as TEMPORAL_GRPC_META_ written as the page writes
// it, TEMPORAL_GRPC_META_<NAME>.
func envReadBySDK(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "go.temporal.io/sdk/contrib/envconfig").Output()
	if err != nil {
		t.Fatalf("go list the SDK's envconfig: %v", err)
	}
	dir := strings.TrimSpace(string(out))
	sources, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil || len(sources) == 0 {
		t.Fatalf("envconfig's source in %s: %v", dir, err)
	}
	quoted := regexp.MustCompile(`"(TEMPORAL_[A-Z0-9_]*)"`)
	var names []string
	for _, src := range sources {
		if strings.HasSuffix(src, "_test.go") {
			continue
		}
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range quoted.FindAllStringSubmatch(string(b), -1) {
			name := m[1]
			if strings.HasSuffix(name, "_") {
				name += "<NAME>"
			}
			if !slices.Contains(names, name) {
				names = append(names, name)
			}
		}
	}
	return names
}

// envOnPage returns the variables the page's tables list (a row's first
// cell), and those listed twice.
func envOnPage(t *testing.T, path string) (names, dup []string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	cell := regexp.MustCompile("^\\| `([A-Z][A-Z0-9_]*(?:<NAME>)?)` \\|")
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		m := cell.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		if slices.Contains(names, m[1]) {
			dup = append(dup, m[1])
		}
		names = append(names, m[1])
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(names) == 0 {
		t.Fatalf("%s: no table rows of variables found", path)
	}
	return names, dup
}

// TestDocsIndexLinksEveryPage holds the documentation together: the index,
// docs/README.md, links every page under docs/, and every relative link in
// the README and docs/ names a file that exists.
func TestDocsIndexLinksEveryPage(t *testing.T) {
	pages := []string{"README.md"}
	err := filepath.WalkDir("docs", func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".md") {
			pages = append(pages, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	links := map[string][]string{} // page -> the files its relative links name
	for _, page := range pages {
		links[page] = relativeLinks(t, page)
		for _, target := range links[page] {
			if _, err := os.Stat(target); err != nil {
				t.Errorf("%s links %s, which does not exist", page, target)
			}
		}
	}
	for _, page := range pages {
		if page == "README.md" || page == filepath.Join("docs", "README.md") {
			continue
		}
		if !slices.Contains(links[filepath.Join("docs", "README.md")], page) {
			t.Errorf("docs/README.md does not link %s", page)
		}
	}
}

// relativeLinks returns the files a Markdown page's relative links and
// images name (outside fenced code), resolved from the repository's root
// and without their #fragment.
func relativeLinks(t *testing.T, page string) []string {
	t.Helper()
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	var out []string
	fenced := false
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		for _, m := range link.FindAllStringSubmatch(line, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "#") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			target, _, _ = strings.Cut(target, "#")
			out = append(out, filepath.Clean(filepath.Join(filepath.Dir(page), target)))
		}
	}
	return out
}
