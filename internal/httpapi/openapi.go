package httpapi

import (
	_ "embed"
	"net/http"
)

// openAPI is the HTTP API's contract (OpenAPI 3.1): every route, body,
// status, error code and header this package answers with. The contract
// tests drive the real server against it, so it cannot drift from the code
// unnoticed; GET /api/openapi.yaml serves it.
//
//go:embed openapi.yaml
var openAPI []byte

// openAPIDocument is GET /api/openapi.yaml: the document this binary was
// built with, so clients read the contract of the server they talk to.
func (s *Server) openAPIDocument(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "application/yaml")
	h.Set("Cache-Control", "public, max-age=300")
	if _, err := w.Write(openAPI); err != nil {
		s.log.DebugContext(r.Context(), "write openapi document", "error", err)
	}
}
