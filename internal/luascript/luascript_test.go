package luascript

import (
	"testing"
	"testing/fstest"
)

func TestLoad(t *testing.T) {
	fsys := fstest.MapFS{"one.lua": {Data: []byte("return 1")}}
	if got := Load(fsys, "one.lua"); got.Hash() != "e0e1f9fabfc9d4800c877a703b823ac0578ff8db" {
		t.Fatalf("hash %s, want SHA-1 of the source", got.Hash())
	}
	defer func() {
		if recover() == nil {
			t.Fatal("a missing script did not panic")
		}
	}()
	Load(fsys, "missing.lua")
}
