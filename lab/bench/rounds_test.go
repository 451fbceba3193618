package bench

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestScheduleInterleaves(t *testing.T) {
	require.Empty(t, Schedule(0))
	require.Equal(t, []Side{SideA, SideB, SideA, SideB, SideA, SideB}, Schedule(3))
}

func TestSpreadOf(t *testing.T) {
	tests := []struct {
		name   string
		in     []float64
		median float64
		q1, q3 float64
	}{
		{"odd", []float64{5, 1, 3, 2, 4}, 3, 2, 4},
		{"even: mean of the middle two", []float64{4, 1, 3, 2}, 2.5, 1.75, 3.25},
		{"one", []float64{0.7}, 0.7, 0.7, 0.7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := SpreadOf(tt.in)
			require.InDelta(t, tt.median, s.Median, 1e-9)
			require.InDelta(t, tt.q1, s.Q1, 1e-9)
			require.InDelta(t, tt.q3, s.Q3, 1e-9)
			require.Equal(t, len(tt.in), s.N)
			require.Equal(t, tt.in, s.Values, "kept in measured order")
		})
	}
	s := SpreadOf([]float64{0.46, 0.79, 0.5, 0.6, 0.55})
	require.Equal(t, 0.46, s.Min)
	require.Equal(t, 0.79, s.Max)
	require.Equal(t, "0.55 [0.46-0.79]", s.String())
	require.Equal(t, Spread{}, SpreadOf(nil))
	require.Equal(t, "-", Spread{}.String())
}

// Paired runs A, B, A, B, ... and pairs round i of A with round i of B.
func TestPairedInterleavesAndPairsRounds(t *testing.T) {
	var order []string
	a := func(_ context.Context, n int) (Stat, error) {
		order = append(order, "A"+string(rune('0'+n)))
		return Stat{Name: "a", Ops: 10, Seconds: 1, PerSec: float64(10 * (n + 1)), P99ms: 20}, nil
	}
	b := func(_ context.Context, n int) (Stat, error) {
		order = append(order, "B"+string(rune('0'+n)))
		return Stat{Name: "b", Ops: 10, Seconds: 1, PerSec: float64(20 * (n + 1)), P99ms: 10}, nil
	}
	c, err := Paired(context.Background(), "s", 5, a, b, "note")
	require.NoError(t, err)
	require.Equal(t, []string{"A0", "B0", "A1", "B1", "A2", "B2", "A3", "B3", "A4", "B4"}, order)
	require.Equal(t, 5, c.Rounds)
	// Every round pair is 1:2 although the rates grow round by round: the
	// ratio is taken per pair, not from the sides' medians.
	require.Equal(t, 0.5, c.Ratio)
	require.Equal(t, 0.5, c.RatioSpread.Min)
	require.Equal(t, 0.5, c.RatioSpread.Max)
	require.Equal(t, 2.0, c.P99Ratio.Median)
	require.Equal(t, 30.0, c.Measured.PerSec, "median of 10..50")
	require.Equal(t, int64(50), c.Measured.Ops, "ops are totals")
	require.Equal(t, "note", c.Note)
}

func TestPairedStopsOnErrors(t *testing.T) {
	ok := func(context.Context, int) (Stat, error) { return Stat{Name: "ok", PerSec: 1}, nil }
	failing := func(_ context.Context, n int) (Stat, error) {
		if n == 1 {
			return Stat{Name: "bad", Errors: 3, FirstError: "boom"}, nil
		}
		return Stat{Name: "bad", PerSec: 1}, nil
	}
	_, err := Paired(context.Background(), "s", 3, ok, failing, "")
	require.ErrorContains(t, err, "round 2 of B")
	require.ErrorContains(t, err, "boom")

	broken := func(context.Context, int) (Stat, error) { return Stat{}, errors.New("no server") }
	_, err = Paired(context.Background(), "s", 3, broken, ok, "")
	require.ErrorContains(t, err, "round 1 of A: no server")
}

func TestMedianStat(t *testing.T) {
	require.Equal(t, Stat{}, MedianStat(nil))
	m := MedianStat([]Stat{
		{Name: "x", Ops: 1, PerSec: 9, P50ms: 1, P99ms: 100, P999ms: 5, Seconds: 1},
		{Name: "x", Ops: 2, PerSec: 1, P50ms: 3, P99ms: 1, P999ms: 6, Seconds: 2, Errors: 1, FirstError: "e"},
		{Name: "x", Ops: 3, PerSec: 5, P50ms: 2, P99ms: 50, P999ms: 7, Seconds: 3},
	})
	require.Equal(t, Stat{Name: "x", Ops: 6, Errors: 1, FirstError: "e", Seconds: 6, PerSec: 5, P50ms: 2, P99ms: 50, P999ms: 6}, m)
}

// The JSON other tools read: the keys issue 14 names must be there.
func TestReportJSONShape(t *testing.T) {
	r := NewReport()
	rs := SpreadOf([]float64{0.5, 0.6, 0.7})
	r.Servers = []ServerRate{{Server: "dev server in memory", OrdersPerS: 24, CeilingPerS: 52, Ratio: 0.6, RatioSpread: rs, Rounds: 3}}
	r.Paths = []PathCost{SummarizeCosts("dev server in memory", PathPaid, "PAID", []WorkflowCost{{Transitions: 8, Events: 23}})}
	r.Settings = []SettingResult{{Name: "eager activities", Values: []string{"system.enableActivityEagerExecution=true"}, Ratio: rs, Adopted: true}}
	r.HTTPSoldOut = []LoadGenFigure{{Generator: "wrk (external)", SoldOutRPS: 17400, SoldOutP99ms: 25, HelloRPS: 33600, HelloP99ms: 11.7, Ratio: rs}}
	r.Comparisons = []Comparison{CompareRounds("redis", []Stat{{PerSec: 1}}, []Stat{{PerSec: 2}}, "")}
	r.Sale = &Sale{Units: 1000, TimeToReserveAll: 43.4, Admitted: Stat{P99ms: 400}, Shed: Stat{P99ms: 20}}
	b, err := json.Marshal(r)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))

	server := m["servers"].([]any)[0].(map[string]any)
	require.Equal(t, 24.0, server["orders_per_s"])
	require.Equal(t, 52.0, server["ceiling_per_s"])
	require.Equal(t, 0.6, server["ratio_spread"].(map[string]any)["median"])
	path := m["paths"].([]any)[0].(map[string]any)
	require.Equal(t, "paid", path["path"])
	require.Equal(t, 8.0, path["transitions"])
	require.Equal(t, 23.0, path["events"])
	setting := m["server_settings"].([]any)[0].(map[string]any)
	require.Equal(t, true, setting["adopted"])
	require.Contains(t, setting, "with_orders_per_s")
	require.Contains(t, setting["ratio"], "min")
	httpFig := m["http_sold_out"].([]any)[0].(map[string]any)
	require.Equal(t, 17400.0, httpFig["sold_out_rps"])
	require.Equal(t, 11.7, httpFig["hello_p99_ms"])
	cmp := m["comparisons"].([]any)[0].(map[string]any)
	require.Equal(t, 0.5, cmp["ratio"])
	require.Contains(t, cmp, "ratio_spread")
	sale := m["sale"].(map[string]any)
	require.Equal(t, 43.4, sale["all_reserved_s"])
	require.Equal(t, 400.0, sale["decision_latency_admitted"].(map[string]any)["p99_ms"])
	require.Equal(t, 20.0, sale["decision_latency_shed"].(map[string]any)["p99_ms"])
}

func TestSummarizeCosts(t *testing.T) {
	pc := SummarizeCosts("s", PathExpired, "EXPIRED", []WorkflowCost{{Transitions: 18, Events: 35, Upserts: 2, Type: "OrderWorkflow"},
		{Transitions: 14, Events: 28, Upserts: 1, Type: "OrderWorkflow"}, {Transitions: 15, Events: 30, Upserts: 1, Type: "OrderWorkflow"}})
	require.Equal(t, PathCost{Server: "s", Path: "expired", Status: "EXPIRED", Workflows: 3, WorkflowType: "OrderWorkflow",
		Transitions: 15, TransitionsMin: 14, TransitionsMax: 18, Events: 30, EventsMin: 28, EventsMax: 35,
		Upserts: 1, UpsertsMin: 1, UpsertsMax: 2}, pc)
	even := SummarizeCosts("s", PathPaid, "PAID", []WorkflowCost{{Transitions: 9, Events: 23}, {Transitions: 8, Events: 23}})
	require.Equal(t, int64(8), even.Transitions, "the lower middle: a count, not a mean")
	require.Equal(t, PathCost{Server: "s", Path: "paid"}, SummarizeCosts("s", "paid", "", nil))
}

func TestReplaceBetween(t *testing.T) {
	doc := "# x\n\nintro\n<!-- b -->\nold\ntable\n<!-- e -->\n\nafter\n"
	got, err := ReplaceBetween(doc, "<!-- b -->", "<!-- e -->", "\nnew\n\n")
	require.NoError(t, err)
	require.Equal(t, "# x\n\nintro\n<!-- b -->\nnew\n<!-- e -->\n\nafter\n", got)
	again, err := ReplaceBetween(got, "<!-- b -->", "<!-- e -->", "new")
	require.NoError(t, err)
	require.Equal(t, got, again, "idempotent")
	_, err = ReplaceBetween("no markers", "<!-- b -->", "<!-- e -->", "x")
	require.Error(t, err)
	_, err = ReplaceBetween("<!-- e --> then <!-- b -->", "<!-- b -->", "<!-- e -->", "x")
	require.Error(t, err, "the end marker must follow the begin marker")
}
