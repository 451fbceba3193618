package httpapi

import (
	"slices"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale"
)

// TestOpenAPIHasEveryAnswer checks the document against the one table of
// answers (errors.go): every code a client can see is in the Error schema
// and in exactly one component response, the one for its status, with the
// WWW-Authenticate challenge and Retry-After the table gives it.
func TestOpenAPIHasEveryAnswer(t *testing.T) {
	doc, err := openapi3.NewLoader().LoadFromData(openAPI)
	require.NoError(t, err)
	require.NoError(t, doc.Validate(t.Context()))

	table := map[flashsale.Code]answer{flashsale.Internal: internalAnswer}
	for code, a := range answers {
		if a.as != "" {
			code = a.as // what the client sees
		}
		table[code] = a
	}
	var visible []string
	for code := range table {
		visible = append(visible, string(code))
	}
	slices.Sort(visible)
	require.Equal(t, visible, enumOf(t, doc.Components.Schemas["Error"].Value.Properties["code"].Value),
		"the Error schema's codes are the table's")

	for code, a := range table {
		var names []string
		for name, r := range doc.Components.Responses {
			if slices.Contains(responseCodes(t, r.Value), string(code)) {
				names = append(names, name)
			}
		}
		require.Len(t, names, 1, "%s must be in exactly one component response", code)
		r := doc.Components.Responses[names[0]].Value
		require.Equal(t, float64(a.status), r.Extensions["x-status"], "%s: status", code)
		if a.challenge != "" {
			h := r.Headers["WWW-Authenticate"]
			require.NotNil(t, h, "%s: WWW-Authenticate", code)
			require.True(t, h.Value.Required)
			require.Equal(t, a.challenge, h.Value.Schema.Value.Const, "%s: challenge", code)
		} else {
			require.NotContains(t, r.Headers, "WWW-Authenticate", code)
		}
		if a.retryAfter > 0 {
			require.Contains(t, r.Headers, "Retry-After", code)
		}
	}
}

// responseCodes are the codes a component response's schema allows
// (allOf: Error and an enum of its own).
func responseCodes(t *testing.T, r *openapi3.Response) []string {
	t.Helper()
	s := r.Content.Get("application/json").Schema.Value
	require.Len(t, s.AllOf, 2)
	return enumOf(t, s.AllOf[1].Value.Properties["code"].Value)
}

func enumOf(t *testing.T, s *openapi3.Schema) []string {
	t.Helper()
	var out []string
	for _, v := range s.Enum {
		out = append(out, v.(string))
	}
	slices.Sort(out)
	return out
}
