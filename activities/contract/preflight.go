package contract

// The go/no-go before a sale opens (docs/sale-day.md, "Go/no-go"): the
// checks `starter preflight` runs, and SaleWorkflow just before its open.

// PreflightSale runs the checks for a sale's SKUs; with Hold, a failing
// check makes the sale open PAUSED (PreflightInput).
const PreflightSale = "PreflightSale"

// PreflightInput names what to check: the sale's SKUs and the expected
// peak of buy requests per second (zero: the capacity check is skipped).
// Hold is SaleWorkflow's: when a check fails, the sale of SKUs[0] is
// marked to open PAUSED.
type PreflightInput struct {
	SKUs         []string `json:"sku_ids"`
	ExpectedPeak int64    `json:"expected_peak_rps,omitempty"`
	Hold         bool     `json:"hold,omitempty"`
}

// PreflightCheck is one check's verdict. Name is stable (stock:<sku>,
// reconcile_schedule, workers, search_attributes, redis_noeviction,
// capacity); Detail says what was seen and, when it failed, what to do.
type PreflightCheck struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail,omitempty"`
}

// PreflightReport is every check, and the failing ones' names.
type PreflightReport struct {
	Checks []PreflightCheck `json:"checks"`
	Failed []string         `json:"failed,omitempty"`
}
