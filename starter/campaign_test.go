//go:build integration

package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// `starter campaign start` refuses a per-buyer limit above 1 (a campaign
// item's pass buys one unit, so it would never apply) and an id outside a
// campaign's alphabet, as the admin API does, before it connects to
// anything.
func TestCampaignStartRefusals(t *testing.T) {
	e := refused(t, exitRefused, "campaign", "start", "--id", "xmas", "--opens-at", "1h", "--closes-at", "2h",
		"--item", "1001:500:10", "--item", "1002:500:10:2")
	require.Equal(t, "INVALID_REQUEST", string(e.Code))
	require.Equal(t, "item 1002: per_user_limit 2: a campaign item sells one unit per buyer (one pass, one unit); leave it out or give 1", e.Message)
	e = refused(t, exitRefused, "campaign", "start", "--id", "x:mas", "--opens-at", "1h", "--closes-at", "2h", "--item", "1001:500:10")
	require.Equal(t, "INVALID_REQUEST", string(e.Code))
	require.Equal(t, "campaign_id must be 1-16 characters of A-Z a-z 0-9 _ -", e.Message)
}
