package testenv

import (
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
)

func TestSummaryPrintsOneRowPerCase(t *testing.T) {
	s := Summary{Title: "suite summary", Columns: []string{"case", "orders", "result"}, Flags: tabwriter.Debug}
	var out strings.Builder
	s.Print(&out)
	if out.Len() != 0 {
		t.Fatalf("a summary without rows printed %q", out.String())
	}
	s.Add("kill-redis", 12, "PASS")
	s.Add("b", 7, "FAIL")
	s.Print(&out)
	want := "\nsuite summary:\n" +
		"case        |orders  |result  |\n" +
		"kill-redis  |12      |PASS    |\n" +
		"b           |7       |FAIL    |\n"
	if out.String() != want {
		t.Fatalf("summary:\n%s\nwant:\n%s", out.String(), want)
	}
}

func TestSummaryTakesRowsInParallel(t *testing.T) {
	s := Summary{Title: "t", Columns: []string{"case"}}
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() { s.Add("x") })
	}
	wg.Wait()
	var out strings.Builder
	s.Print(&out)
	if got := strings.Count(out.String(), "x"); got != 16 {
		t.Fatalf("%d rows printed, want 16:\n%s", got, out.String())
	}
}
