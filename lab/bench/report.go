package bench

import (
	"encoding/json"
	"fmt"
	"image/color"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/flashsale/flashsale/internal/procstat"
	"github.com/flashsale/flashsale/lab/fairness"
)

// Comparison is one measured path beside the path it is compared with.
type Comparison struct {
	Section  string `json:"section"`
	Measured Stat   `json:"measured"`
	Against  Stat   `json:"against"`
	// Ratio is Measured.PerSec / Against.PerSec; for interleaved rounds,
	// the median of the rounds' ratios.
	Ratio float64 `json:"ratio"`
	// Rounds is how many interleaved rounds each side ran (0: one run
	// each); RatioSpread is the per-s ratio's spread over them, P99Ratio
	// Measured's p99 over Against's, round by round.
	Rounds      int     `json:"rounds,omitempty"`
	RatioSpread *Spread `json:"ratio_spread,omitempty"`
	P99Ratio    *Spread `json:"p99_ratio,omitempty"`
	Note        string  `json:"note,omitempty"`
}

// Compare builds a Comparison.
func Compare(section string, measured, against Stat, note string) Comparison {
	return Comparison{Section: section, Measured: measured, Against: against,
		Ratio: Ratio(measured.PerSec, against.PerSec), Note: note}
}

// Sale is the flash-sale scenario's outcome.
type Sale struct {
	Units            int64            `json:"units"`
	Buyers           int              `json:"buyers"`
	Requests         int64            `json:"requests"`
	Answers          map[string]int64 `json:"answers"`
	WorkflowsStarted int64            `json:"workflows_started"`
	Reserved         int64            `json:"reserved"`
	Sold             int64            `json:"sold"`
	Oversold         int64            `json:"oversold"`
	Undersold        int64            `json:"undersold"`
	// TimeToReserveAll is when the last unit was reserved, from the first
	// request.
	TimeToReserveAll float64 `json:"all_reserved_s"`
	// OrdersPerSec is Reserved over TimeToReserveAll: the sale's pace,
	// read beside the admitted p99 so that a lower p99 bought with fewer
	// orders shows.
	OrdersPerSec float64 `json:"orders_per_s"`
	// Decision is every POST /orders answer; Admitted the ones that got a
	// unit (201), Shed the ones that did not (409 SOLD_OUT, 429 BUSY);
	// ByAnswer each answer on its own.
	Decision  Stat            `json:"decision_latency"`
	Admitted  Stat            `json:"decision_latency_admitted"`
	Shed      Stat            `json:"decision_latency_shed"`
	ByAnswer  map[string]Stat `json:"decision_latency_by_answer,omitempty"`
	Timeline  []Point         `json:"timeline"`
	Histogram []Bucket        `json:"histogram"`
}

// SaleRound is one sale of the latency cap's A/B: the same sale through
// an API instance with the cap on (the production default) or off.
type SaleRound struct {
	Cap   bool   `json:"cap"`
	Label string `json:"label"`
	// Variant names a side that is neither the production default nor
	// the cap off (bench --sale-target, --sale-retry-max); SaleCapMedians
	// leaves it out.
	Variant       string  `json:"variant,omitempty"`
	OrdersPerSec  float64 `json:"orders_per_s"`
	AllReservedS  float64 `json:"all_reserved_s"`
	AdmittedP99ms float64 `json:"admitted_p99_ms"`
	ShedP99ms     float64 `json:"shed_p99_ms"`
	// ServerAdmittedP99ms and ServerShedP99ms are the same answers timed
	// by the API itself (flashsale_buy_duration_seconds, from the handler's
	// start to its answer, interpolated within the histogram's buckets):
	// without the crowd's own wait for the CPU, connections and sockets.
	ServerAdmittedP99ms float64 `json:"server_admitted_p99_ms,omitempty"`
	ServerShedP99ms     float64 `json:"server_shed_p99_ms,omitempty"`
	// CPUs is each process's CPU seconds during the sale.
	CPUs             map[string]float64 `json:"cpu_s,omitempty"`
	Admitted         int64              `json:"admitted"`
	WorkflowsStarted int64              `json:"workflows_started"`
	Reserved         int64              `json:"reserved"`
	Oversold         int64              `json:"oversold"`
	Undersold        int64              `json:"undersold"`
}

// SweepPoint is whole orders through a worker with WorkerSlots slots and a
// MySQL pool of MySQLConns connections.
type SweepPoint struct {
	WorkerSlots  int    `json:"worker_slots"`
	MySQLConns   int    `json:"mysql_conns"`
	OrdersPerSec Spread `json:"orders_per_s"`
	Whole        Stat   `json:"whole_order"`
}

// Point is one sample of the sale.
type Point struct {
	Seconds  float64 `json:"s"`
	Reserved int64   `json:"reserved"`
	Left     int64   `json:"left"`
}

// Bucket is one latency histogram bar.
type Bucket struct {
	UpToMs float64 `json:"up_to_ms"`
	Count  int64   `json:"count"`
}

// CostPerOrder is what one whole (paid) order costs the Temporal server,
// measured over a round of orders.
type CostPerOrder struct {
	Server             string  `json:"server"`
	HistoryEvents      int64   `json:"history_events"`
	Transitions        int64   `json:"transitions"`
	ServerCPUms        float64 `json:"server_cpu_ms"`
	ClientRPCs         int     `json:"client_rpcs"`
	CeilingEvents      int64   `json:"ceiling_history_events"`
	CeilingTransitions int64   `json:"ceiling_transitions"`
	CeilingCPUms       float64 `json:"ceiling_server_cpu_ms"`
	MeasuredOrders     int64   `json:"measured_orders"`
}

// ServerRate is one server's whole-order rate against its ceiling's.
type ServerRate struct {
	Server      string  `json:"server"`
	OrdersPerS  float64 `json:"orders_per_s"`
	CeilingPerS float64 `json:"ceiling_per_s"`
	// Ratio is the median of the rounds' orders/ceiling ratios.
	Ratio       float64 `json:"ratio"`
	RatioSpread Spread  `json:"ratio_spread"`
	Rounds      int     `json:"rounds"`
}

// SettingResult is one server setting measured A/B: whole orders on a
// server with it against one without, in interleaved rounds.
type SettingResult struct {
	Name    string   `json:"name"`
	Values  []string `json:"values"`
	Why     string   `json:"why"`
	Adopted bool     `json:"adopted"`
	Server  string   `json:"server"`
	// WithPerS and WithoutPerS are medians of the rounds; Ratio and P99Ratio
	// are with/without, round by round (a ratio above 1 is a win, a p99
	// ratio below 1 is a win).
	WithPerS    float64 `json:"with_orders_per_s"`
	WithoutPerS float64 `json:"without_orders_per_s"`
	WithP99ms   float64 `json:"with_p99_ms"`
	WithoutP99  float64 `json:"without_p99_ms"`
	Ratio       Spread  `json:"ratio"`
	P99Ratio    Spread  `json:"p99_ratio"`
	// Transitions and events of one paid order on each side.
	WithTransitions    int64 `json:"with_transitions"`
	WithoutTransitions int64 `json:"without_transitions"`
	WithEvents         int64 `json:"with_events"`
	WithoutEvents      int64 `json:"without_events"`
	Rounds             int   `json:"rounds"`
}

// LoadGenFigure is the sold-out path against hello world as one load
// generator saw it.
type LoadGenFigure struct {
	Generator    string  `json:"generator"`
	SoldOutRPS   float64 `json:"sold_out_rps"`
	SoldOutP99ms float64 `json:"sold_out_p99_ms"`
	HelloRPS     float64 `json:"hello_rps"`
	HelloP99ms   float64 `json:"hello_p99_ms"`
	Ratio        Spread  `json:"ratio"`
	P99Ratio     Spread  `json:"p99_ratio"`
	Rounds       int     `json:"rounds"`
}

// Report is one bench run.
type Report struct {
	When    time.Time `json:"when"`
	Machine string    `json:"machine"`
	// Params are the round sizes and counts the run used (its flags).
	Params      map[string]any  `json:"params,omitempty"`
	Servers     []ServerRate    `json:"servers"`
	Paths       []PathCost      `json:"paths"`
	Settings    []SettingResult `json:"server_settings"`
	HTTPSoldOut []LoadGenFigure `json:"http_sold_out"`
	Comparisons []Comparison    `json:"comparisons"`
	Costs       []CostPerOrder  `json:"costs"`
	Sale        *Sale           `json:"sale,omitempty"`
	// Shapes are the order's own-shape limits (C1, C2) per server.
	Shapes []ShapeLimits `json:"shapes,omitempty"`
	// Sweep is whole orders at each worker-slot count and MySQL pool size.
	Sweep []SweepPoint `json:"sweep,omitempty"`
	// SaleCap is the latency cap's A/B, in the order run.
	SaleCap []SaleRound `json:"sale_cap,omitempty"`
	// Fair is the fairness benchmark (issue 23): the same crowd with the
	// fair queue off (today's race), then on.
	Fair []fairness.Result `json:"fair,omitempty"`
	// Settle is the settlement A/B under a backlog of reservations.
	Settle *SettleResult `json:"settle,omitempty"`
	Notes  []string      `json:"notes,omitempty"`
	// Seconds is how long the whole run took.
	Seconds float64 `json:"seconds"`
}

// NewReport stamps a report with the machine it ran on.
func NewReport() *Report {
	return &Report{When: time.Now().UTC().Truncate(time.Second),
		Machine: fmt.Sprintf("%s/%s, %d CPUs, %s", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version())}
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode report: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

func spreadCell(s *Spread) string {
	if s == nil || s.N == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f (%.2f-%.2f)", s.Median, s.Min, s.Max)
}

func rangeCell(v, lo, hi int64) string {
	if lo == hi {
		return fmt.Sprint(v)
	}
	return fmt.Sprintf("%d (%d-%d)", v, lo, hi)
}

// Markdown renders the report as tables.
func (r *Report) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Run %s on %s, a machine shared with other work; %.0f s in all. ", r.When.Format(time.RFC3339), r.Machine, r.Seconds)
	b.WriteString("Every ratio is the median of interleaved rounds (A, B, A, B, ...) with its range (min-max) in brackets.\n")
	if len(r.Servers) > 0 {
		b.WriteString("\nWhole orders (reserve + create + pay + confirm) against the ceiling (Update-with-Start whose update returns at once), same callers in flight:\n\n")
		b.WriteString("| server | orders/s | ceiling/s | ratio (range) | rounds |\n|---|---:|---:|---|---:|\n")
		for _, s := range r.Servers {
			fmt.Fprintf(&b, "| %s | %.1f | %.1f | %s | %d |\n", s.Server, s.OrdersPerS, s.CeilingPerS, spreadCell(&s.RatioSpread), s.Rounds)
		}
	}
	if len(r.Paths) > 0 {
		b.WriteString("\nWhat each path costs the server (DescribeWorkflowExecution after it closed; median, range when it varied):\n\n")
		b.WriteString("| server | path | workflow type | final status | state transitions | history events | search-attribute upserts | workflows |\n|---|---|---|---|---:|---:|---:|---:|\n")
		for _, p := range r.Paths {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %d |\n", p.Server, p.Path, p.WorkflowType, p.Status,
				rangeCell(p.Transitions, p.TransitionsMin, p.TransitionsMax), rangeCell(p.Events, p.EventsMin, p.EventsMax),
				rangeCell(p.Upserts, p.UpsertsMin, p.UpsertsMax), p.Workflows)
		}
	}
	if len(r.Settings) > 0 {
		b.WriteString("\nServer settings, each A/B against the base flags (whole orders, interleaved rounds; ratio > 1 and p99 ratio < 1 are wins):\n\n")
		b.WriteString("| setting | server | orders/s with | without | ratio (range) | p99 ms with | without | p99 ratio (range) | transitions with / without | adopted |\n")
		b.WriteString("|---|---|---:|---:|---|---:|---:|---|---|---|\n")
		for _, s := range r.Settings {
			adopted := "no"
			if s.Adopted {
				adopted = "yes"
			}
			fmt.Fprintf(&b, "| %s | %s | %.1f | %.1f | %s | %.0f | %.0f | %s | %d / %d | %s |\n", s.Name, s.Server, s.WithPerS, s.WithoutPerS,
				spreadCell(&s.Ratio), s.WithP99ms, s.WithoutP99, spreadCell(&s.P99Ratio), s.WithTransitions, s.WithoutTransitions, adopted)
		}
	}
	if len(r.HTTPSoldOut) > 0 {
		b.WriteString("\nSold-out path through the HTTP API against a hello-world handler, by two load generators:\n\n")
		b.WriteString("| load generator | sold-out rps | p99 ms | hello rps | p99 ms | rps ratio (range) | p99 ratio (range) | rounds |\n")
		b.WriteString("|---|---:|---:|---:|---:|---|---|---:|\n")
		for _, h := range r.HTTPSoldOut {
			fmt.Fprintf(&b, "| %s | %.0f | %.1f | %.0f | %.1f | %s | %s | %d |\n", h.Generator, h.SoldOutRPS, h.SoldOutP99ms,
				h.HelloRPS, h.HelloP99ms, spreadCell(&h.Ratio), spreadCell(&h.P99Ratio), h.Rounds)
		}
	}
	if len(r.Comparisons) > 0 {
		b.WriteString("\nEvery pair (each side the median of its rounds):\n\n")
		b.WriteString("| section | measured | per s | p50 ms | p99 ms | against | per s | p50 ms | p99 ms | ratio per s (range) | rounds |\n")
		b.WriteString("|---|---|---:|---:|---:|---|---:|---:|---:|---|---:|\n")
		for _, c := range r.Comparisons {
			ratio := fmt.Sprintf("%.2f", c.Ratio)
			if c.RatioSpread != nil {
				ratio = spreadCell(c.RatioSpread)
			}
			fmt.Fprintf(&b, "| %s | %s | %.0f | %.1f | %.1f | %s | %.0f | %.1f | %.1f | %s | %d |\n",
				c.Section, c.Measured.Name, c.Measured.PerSec, c.Measured.P50ms, c.Measured.P99ms,
				c.Against.Name, c.Against.PerSec, c.Against.P50ms, c.Against.P99ms, ratio, c.Rounds)
		}
		b.WriteString("\nA reservation's per-s is the whole orders' rate it was measured in; its latencies are its own.\n")
		for _, c := range r.Comparisons {
			if h := c.Measured.Handoffs; h > 0 {
				fmt.Fprintf(&b, "%s: %d of %d payments (%.1f%%) were handed to their order as a signal (the pay update was not taken within the handoff time) and followed to PAID.\n",
					c.Section, h, c.Measured.Ops, 100*float64(h)/float64(max(1, c.Measured.Ops)))
			}
		}
	}
	if len(r.Costs) > 0 {
		b.WriteString("\nWhat one paid order costs the Temporal server (a round of orders, server CPU from /proc):\n\n")
		b.WriteString("| server | history events | transitions | server CPU ms | client RPCs | ceiling events | ceiling transitions | ceiling CPU ms |\n|---|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, c := range r.Costs {
			fmt.Fprintf(&b, "| %s | %d | %d | %.1f | %d | %d | %d | %.1f |\n", c.Server, c.HistoryEvents, c.Transitions, c.ServerCPUms,
				c.ClientRPCs, c.CeilingEvents, c.CeilingTransitions, c.CeilingCPUms)
		}
	}
	WriteShapes(&b, r.Shapes)
	if len(r.Sweep) > 0 {
		b.WriteString("\nWhole orders by worker slots (WORKER_CONCURRENCY) and MySQL pool (MYSQL_MAX_CONNS), each point a worker of its own, rounds interleaved:\n\n")
		b.WriteString("| worker slots | MySQL connections | orders/s (range) | p50 ms | p99 ms |\n|---:|---:|---|---:|---:|\n")
		for _, p := range r.Sweep {
			fmt.Fprintf(&b, "| %d | %d | %s | %.1f | %.1f |\n", p.WorkerSlots, p.MySQLConns, spreadCell(&p.OrdersPerSec), p.Whole.P50ms, p.Whole.P99ms)
		}
	}
	if s := r.Sale; s != nil {
		b.WriteString("\nFlash sale through the HTTP API:\n\n")
		b.WriteString("| units | buyers | requests | workflows started | reserved | sold | oversold | undersold | all reserved after |\n")
		b.WriteString("|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		fmt.Fprintf(&b, "| %d | %d | %d | %d | %d | %d | %d | %d | %.1f s |\n",
			s.Units, s.Buyers, s.Requests, s.WorkflowsStarted, s.Reserved, s.Sold, s.Oversold, s.Undersold, s.TimeToReserveAll)
		b.WriteString("\n| buy decision latency | answers | p50 ms | p99 ms | p999 ms |\n|---|---:|---:|---:|---:|\n")
		for _, d := range []struct {
			name string
			s    Stat
		}{{"admitted (201)", s.Admitted}, {"shed (409, 429)", s.Shed}, {"all", s.Decision}} {
			fmt.Fprintf(&b, "| %s | %d | %.1f | %.1f | %.1f |\n", d.name, d.s.Ops, d.s.P50ms, d.s.P99ms, d.s.P999ms)
		}
		fmt.Fprintf(&b, "\nAnswers: %s\n", formatAnswers(s.Answers))
	}
	if len(r.SaleCap) > 0 {
		b.WriteString("\nThe latency cap on placements in flight (throughput x 300 ms per API instance), the same sale on and off, interleaved:\n\n")
		b.WriteString("| sale | orders/s | all reserved after | admitted p99 ms | shed p99 ms | the same by the API | workflows started | reserved | oversold | undersold |\n")
		b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, s := range r.SaleCap {
			fmt.Fprintf(&b, "| %s | %.0f | %.1f s | %.0f | %.0f | %.0f / %.0f | %d | %d | %d | %d |\n", s.Label, s.OrdersPerSec, s.AllReservedS,
				s.AdmittedP99ms, s.ShedP99ms, s.ServerAdmittedP99ms, s.ServerShedP99ms, s.WorkflowsStarted, s.Reserved, s.Oversold, s.Undersold)
		}
		on, off := SaleCapMedians(r.SaleCap)
		fmt.Fprintf(&b, "\nMedians: orders/s with the cap %.2fx without it; admitted p99 %.0f ms with, %.0f ms without.\n",
			Ratio(on.OrdersPerSec, off.OrdersPerSec), on.AdmittedP99ms, off.AdmittedP99ms)
	}
	writeSettle(&b, r.Settle)
	writeFair(&b, r.Fair)
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "\n- %s", n)
	}
	if len(r.Notes) > 0 {
		b.WriteString("\n")
	}
	return b.String()
}

// ReplaceBetween returns doc with the text between the begin and end
// marker lines replaced by content (the markers kept), so the README's
// Measured section is regenerated by the run that measured it.
func ReplaceBetween(doc, begin, end, content string) (string, error) {
	i := strings.Index(doc, begin)
	if i < 0 {
		return "", fmt.Errorf("marker %q not found", begin)
	}
	j := strings.Index(doc[i+len(begin):], end)
	if j < 0 {
		return "", fmt.Errorf("marker %q not found after %q", end, begin)
	}
	j += i + len(begin)
	return doc[:i+len(begin)] + "\n" + strings.TrimSpace(content) + "\n" + doc[j:], nil
}

func formatAnswers(m map[string]int64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("`%s` %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}

// WriteChart draws the sale: reservations and stock left over time, and the
// histogram of decision latencies, side by side in one PNG.
func (s *Sale) WriteChart(path string) error {
	over := plot.New()
	over.Title.Text = fmt.Sprintf("Flash sale: %d units, %d buyers", s.Units, s.Buyers)
	over.X.Label.Text = "seconds"
	over.Y.Label.Text = "units"
	reserved := make(plotter.XYs, len(s.Timeline))
	left := make(plotter.XYs, len(s.Timeline))
	for i, p := range s.Timeline {
		reserved[i] = plotter.XY{X: p.Seconds, Y: float64(p.Reserved)}
		left[i] = plotter.XY{X: p.Seconds, Y: float64(p.Left)}
	}
	lr, err := plotter.NewLine(reserved)
	if err != nil {
		return fmt.Errorf("chart: %w", err)
	}
	lr.Color = color.RGBA{R: 31, G: 119, B: 180, A: 255}
	ll, err := plotter.NewLine(left)
	if err != nil {
		return fmt.Errorf("chart: %w", err)
	}
	ll.Color = color.RGBA{R: 214, G: 39, B: 40, A: 255}
	over.Add(lr, ll)
	over.Legend.Add("reserved", lr)
	over.Legend.Add("stock left (units - reserved)", ll)
	over.Legend.Top = true

	hist := plot.New()
	hist.Title.Text = "Buy decision latency"
	hist.X.Label.Text = "ms (bucket upper bound)"
	hist.Y.Label.Text = "requests"
	vals := make(plotter.Values, len(s.Histogram))
	labels := make([]string, len(s.Histogram))
	for i, b := range s.Histogram {
		vals[i] = float64(b.Count)
		labels[i] = fmt.Sprintf("%g", b.UpToMs)
		if b.UpToMs >= 1e9 {
			labels[i] = "more"
		}
	}
	bars, err := plotter.NewBarChart(vals, vg.Points(14))
	if err != nil {
		return fmt.Errorf("chart: %w", err)
	}
	bars.Color = color.RGBA{R: 44, G: 160, B: 44, A: 255}
	hist.Add(bars)
	hist.NominalX(labels...)

	const w, h = 14 * vg.Inch, 5 * vg.Inch
	img := vgimg.New(w, h)
	dc := draw.New(img)
	left1, right1 := splitHorizontal(dc)
	over.Draw(left1)
	hist.Draw(right1)
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("chart: %w", err)
	}
	// For the error path; the Close that counts is checked below.
	defer func() { _ = f.Close() }()
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		return fmt.Errorf("chart: write %s: %w", path, err)
	}
	return f.Close()
}

// LatencyHistogram buckets sorted latencies on a 1-2-5 scale.
func LatencyHistogram(lat []time.Duration) []Bucket {
	bounds := []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000}
	out := make([]Bucket, len(bounds)+1)
	for i, b := range bounds {
		out[i].UpToMs = b
	}
	out[len(bounds)].UpToMs = 1e9
	for _, d := range lat {
		v := ms(d)
		i := 0
		for i < len(bounds) && v > bounds[i] {
			i++
		}
		out[i].Count++
	}
	// Drop empty buckets at both ends so the chart shows the shape.
	lo, hi := 0, len(out)
	for lo < hi && out[lo].Count == 0 {
		lo++
	}
	for hi > lo && out[hi-1].Count == 0 {
		hi--
	}
	return out[lo:hi]
}

// splitHorizontal cuts a canvas into a left and a right half.
func splitHorizontal(c draw.Canvas) (draw.Canvas, draw.Canvas) {
	mid := c.Min.X + (c.Max.X-c.Min.X)/2
	left, right := c, c
	left.Max.X = mid - vg.Points(6)
	right.Min.X = mid + vg.Points(6)
	return left, right
}

// SaleCapMedians is the median orders/s and admitted p99 of the sales with
// the latency cap on, and of those with it off.
func SaleCapMedians(rounds []SaleRound) (on, off SaleRound) {
	var perSec, p99 [2][]float64
	for _, s := range rounds {
		if s.Variant != "" {
			continue
		}
		i := 0
		if !s.Cap {
			i = 1
		}
		perSec[i] = append(perSec[i], s.OrdersPerSec)
		p99[i] = append(p99[i], s.AdmittedP99ms)
	}
	on = SaleRound{Cap: true, OrdersPerSec: SpreadOf(perSec[0]).Median, AdmittedP99ms: SpreadOf(p99[0]).Median}
	off = SaleRound{OrdersPerSec: SpreadOf(perSec[1]).Median, AdmittedP99ms: SpreadOf(p99[1]).Median}
	return on, off
}

// ShapeSide is one side of the order-shape limits (issue 26): whole
// orders, C1 or C2, with the CPU one order cost each process.
type ShapeSide struct {
	Name         string    `json:"name"`
	OrdersPerSec Spread    `json:"orders_per_s"`
	Whole        Stat      `json:"whole"`
	Rounds       int       `json:"rounds"`
	CPUms        []ProcCPU `json:"cpu_ms_per_order"`
	// CPUSumMs is the CPU one order costs every process together;
	// CPUBoundPerSec is 1 / CPUSumMs: the orders a second one core per
	// order's worth of CPU would allow, printed beside the rates.
	CPUSumMs       float64 `json:"cpu_sum_ms"`
	CPUBoundPerSec float64 `json:"cpu_bound_per_s"`
}

// ProcCPU is one process's CPU per order.
type ProcCPU struct {
	Process string  `json:"process"`
	Ms      float64 `json:"ms"`
}

// ShapeLimits are the order's own-shape limits on one server.
type ShapeLimits struct {
	Server string      `json:"server"`
	Sides  []ShapeSide `json:"sides"`
}

// WriteShapes writes each server's order-shape limits as a Markdown
// table.
func WriteShapes(b *strings.Builder, shapes []ShapeLimits) {
	for _, sh := range shapes {
		fmt.Fprintf(b, "\nWhole orders against limits of the order's own shape on the %s (issue 26: C1 = Update-with-Start + a no-op local activity + the deadline timer, then a pay update with a no-op local activity; C2 = C1 whose local activities do the order's Redis and MySQL work), interleaved, with the CPU one order costs each process:\n\n", sh.Server)
		b.WriteString("| side | orders/s (range) | p99 ms |")
		if len(sh.Sides) > 0 {
			for _, p := range sh.Sides[0].CPUms {
				fmt.Fprintf(b, " %s CPU ms |", p.Process)
			}
		}
		b.WriteString(" sum CPU ms | 1 / sum (orders/s) |\n|---|---|---:|")
		if len(sh.Sides) > 0 {
			b.WriteString(strings.Repeat("---:|", len(sh.Sides[0].CPUms)))
		}
		b.WriteString("---:|---:|\n")
		for _, s := range sh.Sides {
			fmt.Fprintf(b, "| %s | %s | %.1f |", s.Name, spreadCell(&s.OrdersPerSec), s.Whole.P99ms)
			for _, p := range s.CPUms {
				fmt.Fprintf(b, " %.2f |", p.Ms)
			}
			fmt.Fprintf(b, " %.2f | %.0f |\n", s.CPUSumMs, s.CPUBoundPerSec)
		}
	}
}

// NewShapeSide summarizes a side's rounds and the CPU each process spent
// over them.
func NewShapeSide(rounds []Stat, procs []procstat.Proc, cpu []time.Duration) ShapeSide {
	s := ShapeSide{Whole: MedianStat(rounds), Rounds: len(rounds)}
	s.Name = s.Whole.Name
	perSec := make([]float64, len(rounds))
	for i, r := range rounds {
		perSec[i] = r.PerSec
	}
	s.OrdersPerSec = SpreadOf(perSec)
	n := float64(max(1, s.Whole.Ops))
	for i, p := range procs {
		ms := float64(cpu[i].Microseconds()) / 1000 / n
		s.CPUms = append(s.CPUms, ProcCPU{Process: p.Name, Ms: ms})
		s.CPUSumMs += ms
	}
	if s.CPUSumMs > 0 {
		s.CPUBoundPerSec = 1000 / s.CPUSumMs
	}
	return s
}
