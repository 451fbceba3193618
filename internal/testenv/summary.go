package testenv

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"text/tabwriter"
)

// Summary is the table a long suite (the fault and scale-out suites)
// prints after its verdicts, one row per case, for the person reading the
// run: cases add their rows as they end, in parallel or not, and TestMain
// prints it once they all have.
type Summary struct {
	// Title heads the table ("scale-out summary").
	Title string
	// Columns name the cells of every row.
	Columns []string
	// Flags are text/tabwriter's (tabwriter.Debug draws the column bars).
	Flags uint

	mu   sync.Mutex
	rows [][]any
}

// Add records one case's row, a cell per column.
func (s *Summary) Add(cells ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rows = append(s.rows, cells)
}

// Print writes the table; nothing when no case added a row.
func (s *Summary) Print(w io.Writer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.rows) == 0 {
		return
	}
	_, _ = fmt.Fprintf(w, "\n%s:\n", s.Title)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', s.Flags)
	_, _ = fmt.Fprintln(tw, strings.Join(s.Columns, "\t")+"\t")
	for _, row := range s.rows {
		for _, c := range row {
			_, _ = fmt.Fprintf(tw, "%v\t", c)
		}
		_, _ = fmt.Fprintln(tw)
	}
	_ = tw.Flush()
}
