package sale

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flashsale/flashsale"
)

// The sale's decisions as SaleWorkflow's activities write them: create the
// sale with its seed's commitment, freeze and shuffle the entrants at the
// open, and move its state (pause, resume, close).

// DefaultMaxEntrants is how many buyers a sale's queue takes unless its
// terms say otherwise. Each costs Redis memory until the sale ends: the
// queue's keys 56 bytes per entrant before the open, 152 after it (its
// rank; lab/results/entrants.md), about 250 with the door's per-buyer
// rate-limit keys. A full queue of the default is about 150-250 MB, and
// opened in 15 s on this 2-core box.
const DefaultMaxEntrants = 1_000_000

// Prepare creates sku's sale in PREQUEUE for the sale id (the workflow's
// run id) and returns the SHA-256 of its seed, hex: the commitment
// published before anyone enters. The seed itself is kept in the store's
// Seeds (MySQL), never in Redis before the open. Repeating it for the same
// id returns the same hash; another id replaces an earlier sale of the SKU
// and its queue. The queue takes at most maxEntrants buyers
// (DefaultMaxEntrants when not positive); the next is QueueFull.
func (s *Store) Prepare(ctx context.Context, sku, saleID string, opensAt time.Time, passTTL time.Duration, maxEntrants int64) (string, error) {
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
		SeedHash(seed), cmp.Or(max(maxEntrants, 0), DefaultMaxEntrants)).Text()
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

// openChunk bounds each Redis call of the open: the entrants are read
// (HSCAN) and their ranks written (ZADD) openChunk at a time, a few
// milliseconds each, so a million entrants never hold Redis, which every
// other SKU's buys share, for more than that at once. One read of them all
// (HKEYS) blocked it 0.4-2 s and the open never finished; a ZADD of 5,000
// into a zset of a million took 18-32 ms on this busy 2-core box.
const openChunk = 1000

// Open freezes the pre-queue, ranks the entrants by the seed and opens the
// sale, revealing the seed. It is idempotent and resumable: a retry after a
// crash reads the same frozen entrants and the same seed, so it computes
// the same ranks, and writes only those the crashed attempt had not
// (progress, the sale's "ranked", moves with each chunk written); on a
// sale already open it changes nothing. progress, if not nil, is called
// with the ranks written so far after each chunk (the activity heartbeats
// it).
func (s *Store) Open(ctx context.Context, sku string, progress func(ranked int64)) (flashsale.OpenedSale, error) {
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
		if state, err = s.shuffle(ctx, sku, entrants, progress); err != nil {
			return flashsale.OpenedSale{}, err
		}
	}
	seed, err := s.rdb.HGet(ctx, ks[kSale], "seed").Result()
	if err != nil {
		return flashsale.OpenedSale{}, fmt.Errorf("read revealed seed of %s: %w", sku, err)
	}
	return flashsale.OpenedSale{Entrants: entrants, Seed: seed, State: state}, nil
}

// shuffle ranks the frozen entrants of sku's sale and reveals the seed,
// from the ranks a crashed attempt wrote on.
func (s *Store) shuffle(ctx context.Context, sku string, entrants int64, progress func(int64)) (State, error) {
	ks := keys(sku)
	sv, err := s.rdb.HMGet(ctx, ks[kSale], "sale_id", "seed_hash", "ranked").Result()
	if err != nil {
		return "", fmt.Errorf("read sale of %s: %w", sku, err)
	}
	saleID, _ := sv[0].(string)
	hash, _ := sv[1].(string)
	done, _ := strconv.ParseInt(fmt.Sprint(sv[2]), 10, 64)
	seed, err := s.seedOf(ctx, sku, saleID, hash)
	if err != nil {
		return "", fmt.Errorf("read seed of %s: %w", sku, err)
	}
	users, err := s.entrants(ctx, ks[kEntered], entrants)
	if err != nil {
		return "", fmt.Errorf("read entrants of %s: %w", sku, err)
	}
	ranked := Ranks(seed, users)
	if int64(len(ranked)) != entrants {
		return "", fmt.Errorf("shuffle %s: %d entrants read, %d frozen", sku, len(ranked), entrants)
	}
	for i := int(done); i < len(ranked); i += openChunk {
		chunk := ranked[i:min(i+openChunk, len(ranked))]
		members := make([]redis.Z, len(chunk))
		for j, u := range chunk {
			members[j] = redis.Z{Score: float64(i + j + 1), Member: u}
		}
		// The ranks and the progress together: a retry resumes exactly
		// where this attempt stopped.
		if _, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.ZAdd(ctx, ks[kRank], members...)
			p.HSet(ctx, ks[kSale], "ranked", i+len(chunk))
			return nil
		}); err != nil {
			return "", fmt.Errorf("write ranks of %s: %w", sku, err)
		}
		if progress != nil {
			progress(int64(i + len(chunk)))
		}
	}
	st, err := revealScript.Run(ctx, s.rdb, ks, seed).Text()
	if err != nil {
		return "", fmt.Errorf("open sale of %s: %w", sku, err)
	}
	return State(st), nil
}

// entrants reads the frozen entrants (n of them) openChunk at a time. A
// scan may return a field twice; Ranks drops the repeats.
func (s *Store) entrants(ctx context.Context, key string, n int64) ([]string, error) {
	users := make([]string, 0, n)
	var cursor uint64
	for {
		kv, next, err := s.rdb.HScan(ctx, key, cursor, "", openChunk).Result()
		if err != nil {
			return nil, err
		}
		for i := 0; i < len(kv); i += 2 {
			users = append(users, kv[i])
		}
		if cursor = next; cursor == 0 {
			return users, nil
		}
	}
}

// Ranks is the shuffle: the users in rank order (the first is rank 1),
// sorted by the SHA-256 of seed + ":" + user id (the order of its hex
// form), ties broken by user id; a user given twice is ranked once. Anyone
// holding the revealed seed and the entrants' ids can run it.
func Ranks(seed string, users []string) []string {
	type keyed struct {
		key  [sha256.Size]byte
		user string
	}
	ks := make([]keyed, len(users))
	for i, u := range users {
		ks[i] = keyed{sha256.Sum256([]byte(seed + ":" + u)), u}
	}
	slices.SortFunc(ks, func(a, b keyed) int {
		if c := bytes.Compare(a.key[:], b.key[:]); c != 0 {
			return c
		}
		return strings.Compare(a.user, b.user)
	})
	out := make([]string, 0, len(ks))
	for i, k := range ks {
		if i == 0 || k.user != ks[i-1].user {
			out = append(out, k.user)
		}
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

// SetEnd sets the end of sku's sale: from closesAt on (by Redis's clock)
// no pass is spent, on any API instance (sale_spend.lua). A CLOSED sale
// keeps its end; NoSale when sku has none.
func (s *Store) SetEnd(ctx context.Context, sku string, closesAt time.Time) (State, error) {
	if err := checkSKU(sku); err != nil {
		return "", err
	}
	st, err := closesScript.Run(ctx, s.rdb, keys(sku), closesAt.UnixMilli()).Text()
	if err != nil {
		return "", fmt.Errorf("set the end of the sale of %s: %w", sku, err)
	}
	if st == "" {
		return "", noSale(sku)
	}
	return State(st), nil
}

// Hold marks sku's sale, not open yet, to open PAUSED: its go/no-go
// failed (SaleWorkflow's PreflightSale). The open then shuffles and
// reveals as usual, but sells nothing until a resume. NoSale when sku has
// none.
func (s *Store) Hold(ctx context.Context, sku string) (State, error) {
	if err := checkSKU(sku); err != nil {
		return "", err
	}
	st, err := holdScript.Run(ctx, s.rdb, keys(sku)).Text()
	if err != nil {
		return "", fmt.Errorf("hold the open of the sale of %s: %w", sku, err)
	}
	if st == "" {
		return "", noSale(sku)
	}
	return State(st), nil
}
