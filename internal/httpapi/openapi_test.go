package httpapi_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/stretchr/testify/require"
)

// loadOpenAPI loads and validates the API's document (openapi.yaml, the
// file the server embeds).
func loadOpenAPI(t *testing.T, data []byte) *openapi3.T {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromData(data)
	require.NoError(t, err)
	require.NoError(t, doc.Validate(t.Context()), "the document is not valid OpenAPI")
	require.True(t, doc.IsOpenAPI31OrLater(), "openapi %s", doc.OpenAPI)
	return doc
}

// TestOpenAPICoversEveryRoute compares the routes server.go registers
// (every route(path, {method: handler}) call in routes) with the document's
// paths and methods, both ways: a route added without its contract, or a
// path documented that nothing serves, fails.
func TestOpenAPICoversEveryRoute(t *testing.T) {
	data, err := os.ReadFile("openapi.yaml")
	require.NoError(t, err)
	doc := loadOpenAPI(t, data)

	var documented []string
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			documented = append(documented, method+" "+path)
		}
	}
	slices.Sort(documented)
	require.Equal(t, serverRoutes(t), documented)
}

// serverRoutes parses server.go for its routes as "METHOD /path". A pattern
// registered on the mux any other way than through route (the catch-all "/"
// apart) fails the test, so none can be missed.
func serverRoutes(t *testing.T) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "server.go", nil, 0)
	require.NoError(t, err)
	var routes []string
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		switch fun := call.Fun.(type) {
		case *ast.Ident:
			if fun.Name != "route" {
				return true
			}
			require.Len(t, call.Args, 2, "route call")
			path := stringLit(t, call.Args[0])
			handlers, ok := call.Args[1].(*ast.CompositeLit)
			require.True(t, ok, "route %s: handlers must be a map literal", path)
			for _, el := range handlers.Elts {
				key := el.(*ast.KeyValueExpr).Key.(*ast.SelectorExpr)
				method, ok := strings.CutPrefix(key.Sel.Name, "Method")
				require.True(t, ok, "route %s: method %s", path, key.Sel.Name)
				routes = append(routes, strings.ToUpper(method)+" "+path)
			}
		case *ast.SelectorExpr:
			if fun.Sel.Name != "HandleFunc" && fun.Sel.Name != "Handle" {
				return true
			}
			if lit, ok := call.Args[0].(*ast.BasicLit); ok {
				require.Equal(t, `"/"`, lit.Value, "a pattern registered outside route(): document it and teach this test")
			}
		}
		return true
	})
	require.NotEmpty(t, routes)
	slices.Sort(routes)
	return routes
}

func stringLit(t *testing.T, e ast.Expr) string {
	t.Helper()
	lit, ok := e.(*ast.BasicLit)
	require.True(t, ok && lit.Kind == token.STRING, "route path must be a string literal")
	s, err := strconv.Unquote(lit.Value)
	require.NoError(t, err)
	return s
}

// responseStatus is the status a component response is for (x-status).
func responseStatus(t *testing.T, name string, r *openapi3.Response) int {
	t.Helper()
	v, ok := r.Extensions["x-status"]
	require.True(t, ok, "components/responses/%s has no x-status", name)
	n, ok := v.(float64)
	require.True(t, ok, "components/responses/%s: x-status %v", name, v)
	return int(n)
}

// Every operation's error statuses refer to the component response for that
// status, so the codes a status may carry are listed once.
func TestOpenAPIErrorStatusesUseTheirComponent(t *testing.T) {
	data, err := os.ReadFile("openapi.yaml")
	require.NoError(t, err)
	doc := loadOpenAPI(t, data)
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			for _, status := range slices.Sorted(maps.Keys(op.Responses.Map())) {
				ref := op.Responses.Value(status)
				if status[0] < '4' {
					continue
				}
				name, ok := strings.CutPrefix(ref.Ref, "#/components/responses/")
				require.True(t, ok, "%s %s %s: errors refer to components/responses", method, path, status)
				require.Equal(t, status, strconv.Itoa(responseStatus(t, name, ref.Value)), "%s %s", method, path)
			}
		}
	}
}
