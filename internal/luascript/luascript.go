// Package luascript loads the Redis Lua scripts a package embeds (the
// stock's in internal/inventory, a fair sale's in internal/sale). Each
// script is wrapped in redis.Script, so calls go out as EVALSHA (the hash,
// not the source, on the wire) with a fallback to EVAL after a NOSCRIPT.
package luascript

import (
	"fmt"
	"io/fs"

	"github.com/redis/go-redis/v9"
)

// Load returns the script in file name of fsys. The names are constants
// beside the embed, so a missing file is a build mistake: Load panics, and
// any test that loads the package finds it.
func Load(fsys fs.FS, name string) *redis.Script {
	src, err := fs.ReadFile(fsys, name)
	if err != nil {
		panic(fmt.Sprintf("embedded Lua script %s: %v", name, err))
	}
	return redis.NewScript(string(src))
}
