package inventory

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// removeBatch is how many keys one pipeline of UNLINKs removes, between
// two looks at the caller's guard.
const removeBatch = 500

// bucketKeySuffixes are what follows "fs:{sku:<sku>:b<i>}:" in the keys
// of bucket i (keys.go): a key of another SKU whose id ends in ":b<i>"
// (its SKU-level keys share the tag) never has one of these.
var bucketKeySuffixes = []string{"stock", "layout", "moves"}

var bucketKeyPrefixes = []string{"order:", "restock:", "moveout:", "movein:", "adjust:"}

// RemoveSKU removes every Redis key of sku: its bucket count first, so
// from that moment Reserve, Release and Restock answer UnknownSKU and
// nothing moves, then every bucket's stock and markers, then the rest of
// the SKU's slot (generation, flags, limits, waitlist, a fair sale's
// queue and passes, the sale page's counts). It SCANs for them (every
// primary on a cluster), as HeldByOrder does: a job at the end of a sale,
// not the buying path.
//
// still is asked before each batch of removals; when it answers false the
// removal stops there, having removed only what it removed so far (the
// SKU went on sale again: its new keys are not this sale's to remove).
// Removing is idempotent, so a retry after a crash removes what is left.
// It returns how many keys this call removed.
func (s *Store) RemoveSKU(ctx context.Context, sku string, still func(context.Context) (bool, error)) (_ int64, err error) {
	defer codeOutage(&err)
	if err := validateSKU(sku); err != nil {
		return 0, fmt.Errorf("remove %s: %w", sku, err)
	}
	var removed int64
	remove := func(keys []string) (bool, error) {
		for len(keys) > 0 {
			batch := keys[:min(removeBatch, len(keys))]
			keys = keys[len(batch):]
			ok, err := still(ctx)
			if err != nil || !ok {
				return false, err
			}
			// One key per command: a bucket's keys and the SKU's are
			// in different slots; a pipeline is split per node.
			cmds, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
				for _, k := range batch {
					p.Unlink(ctx, k)
				}
				return nil
			})
			if err != nil {
				return false, err
			}
			for _, c := range cmds {
				removed += c.(*redis.IntCmd).Val()
			}
		}
		return true, nil
	}
	if ok, err := remove([]string{bucketsKey(sku)}); err != nil || !ok {
		return removed, wrapRemove(sku, err)
	}
	buckets, err := s.scanKeys(ctx, globEscape(orderKeyPrefix(sku))+"*")
	if err != nil {
		return removed, wrapRemove(sku, err)
	}
	prefix := orderKeyPrefix(sku)
	keep := buckets[:0]
	for _, k := range buckets {
		if isBucketKey(k, prefix) {
			keep = append(keep, k)
		}
	}
	if ok, err := remove(keep); err != nil || !ok {
		return removed, wrapRemove(sku, err)
	}
	rest, err := s.scanKeys(ctx, globEscape("fs:{sku:"+sku+"}:")+"*")
	if err != nil {
		return removed, wrapRemove(sku, err)
	}
	// A SKU named "K:b1" (allowed before flashsale.ValidSKUID) shares its
	// tag with SKU K's bucket 1: that bucket's stock and markers match the
	// pattern and are K's, never this SKU's (no SKU-level key is named as
	// a bucket's key is).
	keep = rest[:0]
	for _, k := range rest {
		if !isBucketKeyName(strings.TrimPrefix(k, "fs:{sku:"+sku+"}:")) {
			keep = append(keep, k)
		}
	}
	_, err = remove(keep)
	return removed, wrapRemove(sku, err)
}

func wrapRemove(sku string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("remove %s: %w", sku, err)
}

// isBucketKey reports whether key is a key of one of the SKU's buckets:
// prefix (orderKeyPrefix) + "<digits>}:" + a bucket key's suffix.
func isBucketKey(key, prefix string) bool {
	rest, ok := strings.CutPrefix(key, prefix)
	if !ok {
		return false
	}
	digits, rest, ok := strings.Cut(rest, "}:")
	if !ok || digits == "" || strings.Trim(digits, "0123456789") != "" {
		return false
	}
	return isBucketKeyName(rest)
}

// isBucketKeyName reports whether rest, what follows a key's hash tag and
// ':', names one of a bucket's keys (keys.go).
func isBucketKeyName(rest string) bool {
	for _, s := range bucketKeySuffixes {
		if rest == s {
			return true
		}
	}
	for _, p := range bucketKeyPrefixes {
		if strings.HasPrefix(rest, p) {
			return true
		}
	}
	return false
}

// scanKeys lists the keys matching pattern on every primary.
func (s *Store) scanKeys(ctx context.Context, pattern string) ([]string, error) {
	var mu sync.Mutex
	var keys []string
	scan := func(ctx context.Context, c redis.Cmdable) error {
		iter := c.Scan(ctx, 0, pattern, 1000).Iterator()
		for iter.Next(ctx) {
			mu.Lock()
			keys = append(keys, iter.Val())
			mu.Unlock()
		}
		return iter.Err()
	}
	var err error
	if cc, ok := s.rdb.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error { return scan(ctx, c) })
	} else {
		err = scan(ctx, s.rdb)
	}
	if err != nil {
		return nil, fmt.Errorf("scan %s: %w", pattern, err)
	}
	return keys, nil
}
