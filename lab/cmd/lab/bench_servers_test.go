//go:build integration

package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale/lab/bench"
)

// The servers section end to end, small: a 10-unit sale on the dev server
// and on the production-shaped temporal-server (PostgreSQL), each selling
// every unit exactly once, with every process's CPU read. Needs the
// services of scripts/services.sh and PostgreSQL; builds the Temporal
// server through scripts/cluster.sh tools on first use. Run from the
// checkout's root, as the bench is:
//
//	go test -tags integration -run TestServersSmoke ./lab/cmd/lab
func TestServersSmoke(t *testing.T) {
	root, err := filepath.Abs("../../..")
	require.NoError(t, err)
	t.Chdir(root)
	out := t.TempDir()
	_, err = runBench(context.Background(), []string{"--only", "servers", "--out", out,
		"--sale-units", "10", "--sale-buyers", "30", "--sale-rounds", "1", "--concurrency", "8", "--rounds", "1", "--order-round", "10"})
	require.NoError(t, err)
	raw, err := os.ReadFile(filepath.Join(out, "servers.json"))
	require.NoError(t, err)
	var got struct {
		Rounds []serverRound       `json:"rounds"`
		Shapes []bench.ShapeLimits `json:"shapes"`
	}
	require.NoError(t, json.Unmarshal(raw, &got))
	require.Len(t, got.Rounds, 2)
	for i, server := range []string{"dev", "prod"} {
		r := got.Rounds[i]
		require.Equal(t, server, r.Server)
		require.Equal(t, int64(10), r.Paid)
		require.Zero(t, r.Oversold)
		require.Zero(t, r.Undersold)
		require.Contains(t, r.CPUmsPerUnit, "temporal")
		require.Contains(t, r.OrderCostMs, "worker")
		require.Contains(t, r.OrderCost4Ms, "worker")
		require.Positive(t, r.Predicted)
	}
	// The prod sale's profiles, named for the round, side and process.
	for _, f := range []string{"temporal-cpu", "worker-block", "worker-mutex", "api-block", "api-mutex"} {
		require.FileExists(t, filepath.Join(out, "sale-0-prod-"+f+".pprof"))
	}
	require.NotEmpty(t, got.Rounds[1].ServerCPUTop)
	// Whole orders and C2 on each server, every order of each round done.
	require.Len(t, got.Shapes, 2)
	for _, sh := range got.Shapes {
		require.Len(t, sh.Sides, 2)
		for _, side := range sh.Sides {
			require.Equal(t, int64(10), side.Whole.Ops)
			require.Zero(t, side.Whole.Errors)
		}
	}
	md, err := os.ReadFile(filepath.Join(out, "servers.md"))
	require.NoError(t, err)
	require.Contains(t, string(md), "| prod | 0 |")
}
