package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The capacity model: the cores left, over each order's CPU and its
// sheds' CPU summed across the processes.
func TestPredictRate(t *testing.T) {
	order := map[string]float64{"temporal": 20, "postgres": 10, "worker": 6, "api": 4}
	shed := map[string]float64{"api": 0.5, "redis-server": 0.1}
	// 1.6 cores over (40 ms + 4 sheds x 0.5 ms in the API): 1,600 / 42.
	// redis-server's shed cost counts only where an order is charged too,
	// as the groups are the same in both.
	require.InDelta(t, 1600.0/42, predictRate(1.6, order, shed, 4), 1e-9)
	// No sheds: the order's cost alone.
	require.InDelta(t, 50.0, predictRate(2, order, shed, 0), 1e-9)
	// Nothing measured predicts nothing, not +Inf.
	require.Zero(t, predictRate(2, nil, shed, 3))
	// The same cores at the sale's concurrency (37 ms an order) predict
	// more than at 4 in flight (47 ms): the earlier model's shortfall.
	require.Greater(t, predictRate(2, map[string]float64{"temporal": 37}, nil, 0),
		predictRate(2, map[string]float64{"temporal": 47}, nil, 0))
}

// A calibration sale's CPU less its orders at the order cost, per shed
// answer; a process whose orders cost more than the sale spent sheds
// for nothing, never less.
func TestShedCostOf(t *testing.T) {
	cpu := map[string]float64{"api": 3.0, "worker": 1.0}
	order := map[string]float64{"api": 10, "worker": 12}
	got := shedCostOf(cpu, 100, order, 400)
	require.InDelta(t, (3000.0-1000)/400, got["api"], 1e-9)
	require.Zero(t, got["worker"])
	// No sheds: divided by one, not by zero.
	require.InDelta(t, 2000.0, shedCostOf(cpu, 100, order, 0)["api"], 1e-9)
}

// The A/B's variants: base first, then each variant's environment and
// dynamic config keys; anything else is refused before a server starts.
func TestParseServerAB(t *testing.T) {
	got, err := parseServerAB("shards=16, maxconns=20+cache=1024,pgcommit=0,captarget=0+retrymax=2")
	require.NoError(t, err)
	require.Equal(t, []serverVariant{
		{Name: "base"},
		{Name: "shards=16", Env: []string{"TEMPORAL_NUM_HISTORY_SHARDS=16"}},
		{Name: "maxconns=20+cache=1024", Env: []string{"TEMPORAL_SQL_MAX_CONNS=20"}, Dynamic: map[string]string{"history.hostLevelCacheMaxSize": "1024"}},
		{Name: "pgcommit=0", Postgres: map[string]string{"synchronous_commit": "off"}},
		{Name: "captarget=0+retrymax=2", App: []string{"ADMISSION_TARGET_LATENCY=off", "ADMISSION_MAX_RETRY_AFTER=2s"}},
	}, got)
	require.Equal(t, "prod-maxconns20-cache1024", got[2].sideName())
	for _, bad := range []string{"", "shards", "shards=0", "shards=x", "nope=4", "shards=4+", "pgcommit", "pgcommit=2", "pgcommit=off", "retrymax=0", "captarget=-1", "captarget=x"} {
		_, err := parseServerAB(bad)
		require.Error(t, err, bad)
	}
}

// A dynamic config key is set where it is, or appended.
func TestWithDynamic(t *testing.T) {
	doc := "# c\nhistory.hostLevelCacheMaxSize:\n  - value: 8096\nfrontend.namespaceRPS.visibility:\n  - value: 100\n"
	require.Equal(t, "# c\nhistory.hostLevelCacheMaxSize:\n  - value: 512\nfrontend.namespaceRPS.visibility:\n  - value: 100\n",
		withDynamic(doc, "history.hostLevelCacheMaxSize", "512"))
	require.Equal(t, doc+"history.cacheMaxSize:\n  - value: 64\n", withDynamic(doc, "history.cacheMaxSize", "64"))
	require.Equal(t, "a:\n  - value: 1\nk:\n  - value: 2\n", withDynamic("a:\n  - value: 1", "k", "2"))
}
