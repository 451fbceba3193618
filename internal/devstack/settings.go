package devstack

import "slices"

// BaseDynamicConfig is what every dev server this project starts gets,
// whatever else is chosen: the default transfer-queue poll rate (20/s) adds
// ~50 ms at every task hand-off, ~200 ms to an Update-with-Start answer.
var BaseDynamicConfig = []string{"history.transferProcessorMaxPollRPS=1000"}

// Tuning is one server setting the benchmark measures A/B against
// BaseDynamicConfig alone (starter bench, "server settings").
type Tuning struct {
	Name string `json:"name"`
	// Values are dynamic-config key=value pairs, as the CLI's
	// --dynamic-config-value takes them.
	Values []string `json:"values"`
	// Why the setting could help, in one sentence.
	Why string `json:"why"`
	// Adopted is true when the measurement said it wins (or costs nothing
	// and removes a known cost): it is then in DefaultDynamicConfig and in
	// scripts/temporal-dev.sh.
	Adopted bool `json:"adopted"`
}

// Tunings are the candidate settings of issue 14, each measured by the
// bench. Adopted reflects the measured run in lab/results/results.json: the
// four together gave 1.20x the whole orders/s (1.10-1.43 over five
// interleaved rounds) and 0.83x the p99, while none alone was outside the
// rounds' noise, so they are adopted as a bundle; the README's "dev server
// settings" section says why.
var Tunings = []Tuning{
	{
		Name:   "search-attribute cache",
		Values: []string{"system.forceSearchAttributesCacheRefreshOnRead=false"},
		Why: "the dev server forces the refresh on, so every search-attribute lookup (each start and upsert " +
			"of OrderStatus, UserId, SkuIds) reads the database; the attributes are registered at start and never change",
		Adopted: true,
	},
	{
		Name:   "eager activities",
		Values: []string{"system.enableActivityEagerExecution=true"},
		Why: "a normal activity can start inside the workflow task's completion: one matching round trip and " +
			"one transition fewer per activity",
		Adopted: true,
	},
	{
		Name:   "one task-queue partition",
		Values: []string{"matching.numTaskqueueReadPartitions=1", "matching.numTaskqueueWritePartitions=1"},
		Why: "with one worker and few pollers a task on one of the default 4 partitions without a waiting poller " +
			"is forwarded or, after 200 ms, written to the database and read back",
		Adopted: true,
	},
	{
		Name: "history caches for 15 minutes of open orders",
		// 15 minutes at 100 orders/s is 90,000 open workflows. The dev
		// server caps the mutable-state cache at 8,096 entries (the CLI's
		// devserver sets history.hostLevelCacheMaxSize; the server's own
		// default is 128,000), and the events cache is 512 KiB per shard on
		// the dev server's one shard: a few hundred orders' events.
		Values: []string{"history.hostLevelCacheMaxSize=131072", "history.eventsCacheMaxSizeBytes=67108864"},
		Why: "mutable state and events of every order still waiting for its payment stay in memory instead of " +
			"being read back from SQLite when the payment or the deadline arrives",
		Adopted: true,
	},
}

// DefaultDynamicConfig is BaseDynamicConfig plus every adopted tuning: what
// StartTemporal passes unless told otherwise, and what
// scripts/temporal-dev.sh passes (a test keeps the two in step).
func DefaultDynamicConfig() []string {
	out := slices.Clone(BaseDynamicConfig)
	for _, t := range Tunings {
		if t.Adopted {
			out = append(out, t.Values...)
		}
	}
	return out
}

// WithTunings is BaseDynamicConfig plus the given tunings' values, for an
// A/B measurement.
func WithTunings(ts ...Tuning) []string {
	out := slices.Clone(BaseDynamicConfig)
	for _, t := range ts {
		out = append(out, t.Values...)
	}
	return out
}
