package sale

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flashsale/flashsale"
)

// The sale's decisions as SaleWorkflow's activities write them: create the
// sale with its seed's commitment, freeze and shuffle the entrants at the
// open, and move its state (pause, resume, close).

// Prepare creates sku's sale in PREQUEUE for the sale id (the workflow's
// run id) and returns the SHA-256 of its seed, hex: the commitment
// published before anyone enters. The seed itself is kept in the store's
// Seeds (MySQL), never in Redis before the open. Repeating it for the same
// id returns the same hash; another id replaces an earlier sale of the SKU
// and its queue.
func (s *Store) Prepare(ctx context.Context, sku, saleID string, opensAt time.Time, passTTL time.Duration) (string, error) {
	if err := checkSKU(sku); err != nil {
		return "", err
	}
	if s.seeds == nil {
		return "", fmt.Errorf("prepare sale of %s: no store for its seed", sku)
	}
	fresh := make([]byte, 32)
	_, _ = rand.Read(fresh) // never fails (crypto/rand)
	seed, err := s.seeds.KeepSaleSeed(ctx, saleID, sku, hex.EncodeToString(fresh))
	if err != nil {
		return "", fmt.Errorf("prepare sale of %s: %w", sku, err)
	}
	hash, err := prepareScript.Run(ctx, s.rdb, keys(sku), saleID, opensAt.UnixMilli(), passTTL.Milliseconds(),
		SeedHash(seed)).Text()
	if err != nil {
		return "", fmt.Errorf("prepare sale of %s: %w", sku, err)
	}
	return hash, nil
}

// seedOf is the seed of sku's sale saleID, checked against its commitment
// (hash). A sale prepared before seeds left Redis has it in its seed key.
func (s *Store) seedOf(ctx context.Context, sku, saleID, hash string) (string, error) {
	var seed string
	if s.seeds != nil {
		var err error
		if seed, err = s.seeds.SaleSeed(ctx, saleID); err != nil {
			return "", err
		}
	}
	if seed == "" {
		legacy, err := s.rdb.Get(ctx, keys(sku)[kSeed]).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return "", err
		}
		seed = legacy
	}
	if seed == "" || SeedHash(seed) != hash {
		return "", fmt.Errorf("no seed of sale %s matches its commitment %s", saleID, hash)
	}
	return seed, nil
}

// SeedHash is the commitment to a seed (hex): the hex SHA-256 of its hex
// form.
func SeedHash(seed string) string {
	h := sha256.Sum256([]byte(seed))
	return hex.EncodeToString(h[:])
}

// Open freezes the pre-queue, ranks the entrants by the seed and opens the
// sale, revealing the seed. It is idempotent: a retry after a crash reads
// the same frozen entrants and the same seed, so it writes the same ranks;
// on a sale already open it changes nothing.
func (s *Store) Open(ctx context.Context, sku string) (flashsale.OpenedSale, error) {
	if err := checkSKU(sku); err != nil {
		return flashsale.OpenedSale{}, err
	}
	ks := keys(sku)
	res, err := freezeScript.Run(ctx, s.rdb, ks).Slice()
	if err != nil {
		return flashsale.OpenedSale{}, fmt.Errorf("freeze queue of %s: %w", sku, err)
	}
	state, entrants := State(res[0].(string)), res[1].(int64)
	if state == "" {
		return flashsale.OpenedSale{}, noSale(sku)
	}
	if state == Shuffling {
		users, err := s.rdb.HKeys(ctx, ks[kEntered]).Result()
		if err != nil {
			return flashsale.OpenedSale{}, fmt.Errorf("read entrants of %s: %w", sku, err)
		}
		id, err := s.rdb.HMGet(ctx, ks[kSale], "sale_id", "seed_hash").Result()
		if err != nil {
			return flashsale.OpenedSale{}, fmt.Errorf("read sale of %s: %w", sku, err)
		}
		saleID, _ := id[0].(string)
		hash, _ := id[1].(string)
		seed, err := s.seedOf(ctx, sku, saleID, hash)
		if err != nil {
			return flashsale.OpenedSale{}, fmt.Errorf("read seed of %s: %w", sku, err)
		}
		if err := s.writeRanks(ctx, ks[kRank], Ranks(seed, users)); err != nil {
			return flashsale.OpenedSale{}, fmt.Errorf("write ranks of %s: %w", sku, err)
		}
		st, err := revealScript.Run(ctx, s.rdb, ks, seed).Text()
		if err != nil {
			return flashsale.OpenedSale{}, fmt.Errorf("open sale of %s: %w", sku, err)
		}
		state = State(st)
	}
	seed, err := s.rdb.HGet(ctx, ks[kSale], "seed").Result()
	if err != nil {
		return flashsale.OpenedSale{}, fmt.Errorf("read revealed seed of %s: %w", sku, err)
	}
	return flashsale.OpenedSale{Entrants: entrants, Seed: seed, State: state}, nil
}

// writeRanks writes the entrants' ranks in batches, in one pipeline. A
// retry writes the same scores again.
func (s *Store) writeRanks(ctx context.Context, key string, ranked []string) error {
	const batch = 1000
	pipe := s.rdb.Pipeline()
	for i := 0; i < len(ranked); i += batch {
		members := make([]redis.Z, 0, batch)
		for j, u := range ranked[i:min(i+batch, len(ranked))] {
			members = append(members, redis.Z{Score: float64(i + j + 1), Member: u})
		}
		pipe.ZAdd(ctx, key, members...)
	}
	if len(ranked) == 0 {
		return nil
	}
	_, err := pipe.Exec(ctx)
	return err
}

// Ranks is the shuffle: the users in rank order (the first is rank 1),
// sorted by the hex SHA-256 of seed + ":" + user id. Anyone holding the
// revealed seed and the entrants' ids can run it.
func Ranks(seed string, users []string) []string {
	type keyed struct{ key, user string }
	ks := make([]keyed, len(users))
	for i, u := range users {
		h := sha256.Sum256([]byte(seed + ":" + u))
		ks[i] = keyed{hex.EncodeToString(h[:]), u}
	}
	slices.SortFunc(ks, func(a, b keyed) int {
		if a.key != b.key {
			if a.key < b.key {
				return -1
			}
			return 1
		}
		if a.user < b.user {
			return -1
		}
		if a.user > b.user {
			return 1
		}
		return 0
	})
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = k.user
	}
	return out
}

// SetState moves sku's sale to state `to` if it is in one of from (or
// already in `to`), and returns the state it is in after the call; a move
// the state does not allow is a SaleStateConflict error.
func (s *Store) SetState(ctx context.Context, sku string, to State, from ...State) (State, error) {
	if err := checkSKU(sku); err != nil {
		return "", err
	}
	args := []any{string(to)}
	for _, f := range from {
		args = append(args, string(f))
	}
	st, err := stateScript.Run(ctx, s.rdb, keys(sku), args...).Text()
	switch {
	case err != nil:
		return "", fmt.Errorf("set sale of %s %s: %w", sku, to, err)
	case st == "":
		return "", noSale(sku)
	case State(st) != to:
		return State(st), flashsale.Errorf(flashsale.SaleStateConflict, "the sale of %s is %s", sku, st)
	}
	return State(st), nil
}
