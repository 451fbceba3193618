package sale_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/sale"
)

// A pass binds buyer and SKU; a forged or altered one is refused.
func TestPassSignature(t *testing.T) {
	s := sale.NewSigner("admin-token-0123456789")
	p := sale.Pass{SaleID: "run-1", SKU: "sku1", UserID: "alice", Rank: 3, Expiry: time.UnixMilli(1_800_000_000_000)}
	tok := s.Sign(p)
	got, err := s.Verify(tok, "alice", "sku1")
	require.NoError(t, err)
	require.Equal(t, p, got)
	for name, c := range map[string]struct {
		tok, buyer, sku string
		code            flashsale.Code
	}{
		"other buyer":  {tok, "bob", "sku1", flashsale.PassForeign},
		"other sku":    {tok, "alice", "sku2", flashsale.PassForeign},
		"other key":    {sale.NewSigner("another-admin-token-0123").Sign(p), "alice", "sku1", flashsale.PassRequired},
		"altered":      {"x" + tok, "alice", "sku1", flashsale.PassRequired},
		"empty":        {"", "alice", "sku1", flashsale.PassRequired},
		"no signature": {tok[:len(tok)-10], "alice", "sku1", flashsale.PassRequired},
	} {
		_, err := s.Verify(c.tok, c.buyer, c.sku)
		require.Equal(t, c.code, flashsale.ErrorCode(err), name)
	}
}
