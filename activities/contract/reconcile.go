package contract

// The reconcile and resync workflows' activities, as the worker registers
// them (the methods of activities.Reconciler).
const (
	ListSKUs     = "ListSKUs"
	ObserveStock = "ObserveStock"
	RestoreStock = "RestoreStock"
	CorrectStock = "CorrectStock"
	ResyncStock  = "ResyncStock"
	HoldDrift    = "HoldDrift"
)

// HoldDriftInput is a confirmed drift larger than the run may correct by
// itself, with the run's two observations for the report.
type HoldDriftInput struct {
	SKU    string           `json:"sku_id"`
	First  StockObservation `json:"first"`
	Second StockObservation `json:"second"`
	// Limit is the most the run may correct unattended.
	Limit int64  `json:"limit"`
	RunID string `json:"run_id"`
}

// HoldDriftResult is the hold's row: written now, or by an earlier run
// that confirmed the same drift (with a person's decision).
type HoldDriftResult struct {
	HoldID int64  `json:"hold_id"`
	Status string `json:"status"`
}

// ListSKUsInput is empty; it exists so fields can be added.
type ListSKUsInput struct{}

// ListSKUsResult lists every SKU MySQL knows, sorted.
type ListSKUsResult struct {
	SKUs []string `json:"skus"`
}

// StockObservation compares one SKU's Redis buckets with MySQL.
type StockObservation struct {
	SKU string `json:"sku_id"`
	// UnknownSKU: MySQL has no inventory row; there is nothing to compare.
	UnknownSKU bool `json:"unknown_sku,omitempty"`
	// Ended: the SKU's fair sale has ended (MySQL's sale_ended_at) and
	// its Redis keys are being removed or gone: nothing is on sale and
	// there is nothing to compare or restore (Drift is 0) until a preheat
	// starts another sale.
	Ended bool `json:"ended,omitempty"`
	// Missing: Redis has no bucket count for the SKU (lost, or never
	// preheated); buyers are answered UNKNOWN_SKU.
	Missing bool `json:"missing,omitempty"`
	// Torn: stock came back or a reconciler acted while every attempt was
	// reading; the numbers may be off by those units.
	Torn    bool  `json:"torn,omitempty"`
	Fence   int64 `json:"fence"`
	Buckets int   `json:"buckets"`
	// RedisUnits sums the buckets (a negative bucket counts as empty).
	RedisUnits      int64 `json:"redis_units"`
	NegativeBuckets []int `json:"negative_buckets,omitempty"`
	// InFlight is held in Redis by orders whose running workflow has a
	// MySQL or Redis move still to make (see activities.Reconciler).
	InFlight       int64 `json:"in_flight"`
	InFlightOrders int   `json:"in_flight_orders"`
	// Dead is held in Redis by orders MySQL does not count and whose
	// workflow has ended: units kept out of Redis after a StockDrift
	// refusal. Informational; they are neither drift nor in flight.
	Dead        int64 `json:"dead"`
	DBAvailable int64 `json:"db_available"`
	// Total is MySQL's total units of the SKU: the gate's percentage is
	// of it.
	Total int64 `json:"total,omitempty"`
	// Drift is DBAvailable - RedisUnits - InFlight: positive when Redis
	// is short (undersell), negative when it offers units MySQL does not
	// have.
	Drift int64 `json:"drift"`
}

// ObserveStockInput names the SKUs to observe.
type ObserveStockInput struct {
	SKUs []string `json:"skus"`
}

// ObserveStockResult has one observation per SKU, in input order.
type ObserveStockResult struct {
	Observations []StockObservation `json:"observations"`
}

// RestoreStockInput names a SKU whose buckets Redis lost.
type RestoreStockInput struct {
	SKU string `json:"sku_id"`
}

// RestoreStockResult reports the restore.
type RestoreStockResult struct {
	// Restored is false when the SKU was already back in Redis (another
	// run, or a retry of this one, restored it).
	Restored    bool  `json:"restored"`
	Buckets     int   `json:"buckets"`
	RedisUnits  int64 `json:"redis_units"`
	DBAvailable int64 `json:"db_available"`
}

// CorrectStockInput is a drift seen identically by two observations.
type CorrectStockInput struct {
	SKU string `json:"sku_id"`
	// Delta is the drift: units to add (positive) or remove (negative).
	Delta int64 `json:"delta"`
	// Fence is the reconcile fence both observations read.
	Fence int64 `json:"fence"`
	// CorrectionID makes the correction idempotent; unique per run and SKU.
	CorrectionID string `json:"correction_id"`
	// HoldID, when set, is the approved hold this correction applies; it
	// is marked applied once the correction lands.
	HoldID int64 `json:"hold_id,omitempty"`
}

// CorrectStockResult reports the correction.
type CorrectStockResult struct {
	// Claimed is false when another correction or a restore moved the
	// fence first; nothing was changed then.
	Claimed bool `json:"claimed"`
	// Applied is what moved: Delta, or less when removing units that
	// buyers took meanwhile.
	Applied int64 `json:"applied"`
}

// ResyncStockInput names a SKU flagged for a Redis resync.
type ResyncStockInput struct {
	SKU string `json:"sku_id"`
}

// ResyncStockResult reports what the resync did.
type ResyncStockResult struct {
	// Flag is the inventory.redis_resync value the resync cleared; zero
	// when the SKU was not flagged (nothing was done).
	Flag int64 `json:"flag"`
	// Restored: Redis had lost the SKU and it was re-preheated from MySQL.
	Restored bool `json:"restored,omitempty"`
	// Observation is the comparison the correction was based on.
	Observation *StockObservation `json:"observation,omitempty"`
	// Applied is the units moved into (positive) or out of Redis.
	Applied int64 `json:"applied,omitempty"`
}
