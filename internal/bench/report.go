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
)

// Comparison is one measured path beside the path it is compared with.
type Comparison struct {
	Section  string `json:"section"`
	Measured Stat   `json:"measured"`
	Against  Stat   `json:"against"`
	// Ratio is Measured.PerSec / Against.PerSec.
	Ratio float64 `json:"ratio"`
	Note  string  `json:"note,omitempty"`
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
	TimeToReserveAll float64          `json:"time_to_reserve_all_s"`
	Decision         Stat             `json:"decision_latency"`
	// Timeline of reservations and stock left, for the chart.
	Timeline []Point `json:"timeline"`
	// Histogram of decision latencies in ms (upper bucket bounds).
	Histogram []Bucket `json:"histogram"`
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

// CostPerOrder is what one order costs the Temporal server, measured.
type CostPerOrder struct {
	Server         string  `json:"server"`
	HistoryEvents  int     `json:"history_events"`
	ServerCPUms    float64 `json:"server_cpu_ms"`
	ClientRPCs     int     `json:"client_rpcs"`
	CeilingEvents  int     `json:"ceiling_history_events"`
	CeilingCPUms   float64 `json:"ceiling_server_cpu_ms"`
	MeasuredOrders int64   `json:"measured_orders"`
}

// Report is one bench run.
type Report struct {
	When        time.Time      `json:"when"`
	Machine     string         `json:"machine"`
	Comparisons []Comparison   `json:"comparisons"`
	Costs       []CostPerOrder `json:"costs"`
	Sale        *Sale          `json:"sale,omitempty"`
	Notes       []string       `json:"notes,omitempty"`
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

// Markdown renders the report as tables.
func (r *Report) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Run %s on %s.\n\n", r.When.Format(time.RFC3339), r.Machine)
	b.WriteString("| section | measured | per s | p50 ms | p99 ms | against | per s | p50 ms | p99 ms | ratio (per s) |\n")
	b.WriteString("|---|---|---:|---:|---:|---|---:|---:|---:|---:|\n")
	for _, c := range r.Comparisons {
		fmt.Fprintf(&b, "| %s | %s | %.0f | %.1f | %.1f | %s | %.0f | %.1f | %.1f | %.2f |\n",
			c.Section, c.Measured.Name, c.Measured.PerSec, c.Measured.P50ms, c.Measured.P99ms,
			c.Against.Name, c.Against.PerSec, c.Against.P50ms, c.Against.P99ms, c.Ratio)
	}
	b.WriteString("\nA reservation's per-s is the whole orders' rate it was measured in; its latencies are its own.\n")
	if len(r.Costs) > 0 {
		b.WriteString("\nWhat one order costs the Temporal server (measured):\n\n")
		b.WriteString("| server | history events | server CPU ms | client RPCs | ceiling events | ceiling CPU ms |\n|---|---:|---:|---:|---:|---:|\n")
		for _, c := range r.Costs {
			fmt.Fprintf(&b, "| %s | %d | %.1f | %d | %d | %.1f |\n", c.Server, c.HistoryEvents, c.ServerCPUms, c.ClientRPCs, c.CeilingEvents, c.CeilingCPUms)
		}
	}
	if s := r.Sale; s != nil {
		b.WriteString("\nFlash sale through the HTTP API:\n\n")
		b.WriteString("| units | buyers | requests | workflows started | reserved | sold | oversold | undersold | all reserved after | decision p50 / p99 / p999 ms |\n")
		b.WriteString("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
		fmt.Fprintf(&b, "| %d | %d | %d | %d | %d | %d | %d | %d | %.1f s | %.1f / %.1f / %.1f |\n",
			s.Units, s.Buyers, s.Requests, s.WorkflowsStarted, s.Reserved, s.Sold, s.Oversold, s.Undersold,
			s.TimeToReserveAll, s.Decision.P50ms, s.Decision.P99ms, s.Decision.P999ms)
		fmt.Fprintf(&b, "\nAnswers: %s\n", formatAnswers(s.Answers))
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "\n- %s", n)
	}
	if len(r.Notes) > 0 {
		b.WriteString("\n")
	}
	return b.String()
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
	defer f.Close()
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
