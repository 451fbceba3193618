package httpapi

import "testing"

// BenchmarkDecodeOrder measures strict decoding and validation of a buy
// request, which every request that passes the size cap pays.
func BenchmarkDecodeOrder(b *testing.B) {
	body := []byte(`{"client_order_id":"0192f7e4-8c1a-7b3e-9d2f-5a6b7c8d9e0f","user_id":"user-12345","items":[{"sku_id":"1001","quantity":1}]}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := decodeOrder(body); err != nil {
			b.Fatal(err)
		}
	}
}
