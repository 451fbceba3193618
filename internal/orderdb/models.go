package orderdb

import (
	"time"

	"github.com/flashsale/flashsale"
)

// GORM models, one per table of migrations/00001_init.sql. They are kept
// unexported so the public API stays plain structs independent of the ORM.
// Automatic timestamps are disabled: the store writes UTC times itself so a
// returned value equals what a later read returns.

type inventoryRow struct {
	SKUID        string `gorm:"column:sku_id;primaryKey"`
	Total        int64  `gorm:"column:total"`
	Available    int64  `gorm:"column:available"`
	Frozen       int64  `gorm:"column:frozen"`
	Sold         int64  `gorm:"column:sold"`
	Price        int64  `gorm:"column:price"`
	BucketCount  int    `gorm:"column:bucket_count"`
	PerUserLimit int    `gorm:"column:per_user_limit"`
	RedisResync  int64  `gorm:"column:redis_resync"`
	// BucketRows is how many bucket rows hold part of the SKU's stock
	// (SplitStock); 0 for a SKU whose stock is all on this row.
	BucketRows int `gorm:"column:bucket_rows"`
	// SaleStartedAt is the last PutSKU: the per-user limit counts orders
	// created since.
	SaleStartedAt time.Time `gorm:"column:sale_started_at"`
	// SaleEndedAt is set once the SKU's fair sale ended (EndSale): its
	// Redis keys are being removed or gone. A PutSKU or preheat clears it.
	SaleEndedAt *time.Time `gorm:"column:sale_ended_at"`
	// Queued: sold through a fair sale only (flashsale.SKU.Queued).
	Queued bool `gorm:"column:queued"`
	// PaymentWindowMs is the SKU's payment window (flashsale.Terms); 0:
	// the worker's.
	PaymentWindowMs int64 `gorm:"column:payment_window_ms"`
	// LatePayment, ReleaseOnFailedPayment: the SKU's rules for money at
	// the deadline's edge (flashsale.Terms).
	LatePayment            string `gorm:"column:late_payment"`
	ReleaseOnFailedPayment bool   `gorm:"column:release_on_failed_payment"`
	// Deduct, Overbook: when the SKU's units are taken (flashsale.Terms).
	Deduct    string    `gorm:"column:deduct"`
	Overbook  int       `gorm:"column:overbook"`
	CreatedAt time.Time `gorm:"column:created_at;autoCreateTime:false"`
	UpdatedAt time.Time `gorm:"column:updated_at;autoUpdateTime:false"`
}

func (inventoryRow) TableName() string { return "inventory" }

func (r inventoryRow) toInventory() Inventory {
	return Inventory{
		SKU:          r.SKUID,
		Total:        r.Total,
		Available:    r.Available,
		Frozen:       r.Frozen,
		Sold:         r.Sold,
		Price:        r.Price,
		Buckets:      r.BucketCount,
		PerUserLimit: r.PerUserLimit,
		RedisResync:  r.RedisResync,
		SaleEndedAt:  utcPtr(r.SaleEndedAt),
		Queued:       r.Queued,
		Terms:        r.terms(),
	}
}

// latePayment reads the column: the default as the zero value, as a SKU
// defined without terms has it.
func latePayment(col string) flashsale.LatePayment {
	if flashsale.LatePayment(col) == flashsale.LateRefund {
		return ""
	}
	return flashsale.LatePayment(col)
}

// deduct reads the column, the default as the zero value.
func deduct(col string) flashsale.Deduct {
	if flashsale.Deduct(col) == flashsale.DeductHold {
		return ""
	}
	return flashsale.Deduct(col)
}

// terms are the row's sale terms.
func (r inventoryRow) terms() flashsale.Terms {
	return flashsale.Terms{
		PaymentWindow:          flashsale.Duration(time.Duration(r.PaymentWindowMs) * time.Millisecond),
		LatePayment:            latePayment(r.LatePayment),
		ReleaseOnFailedPayment: r.ReleaseOnFailedPayment,
		Deduct:                 deduct(r.Deduct),
		Overbook:               r.Overbook,
	}
}

// utcPtr is t in UTC, or nil.
func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

type orderRow struct {
	ID       int64     `gorm:"column:id;primaryKey;autoIncrement"`
	OrderID  string    `gorm:"column:order_id"`
	UserID   string    `gorm:"column:user_id"`
	Status   string    `gorm:"column:status"`
	Amount   int64     `gorm:"column:amount"`
	PayBy    time.Time `gorm:"column:pay_by"`
	Reason   string    `gorm:"column:reason"`
	Degraded bool      `gorm:"column:degraded"`
	// The order's rules (Order.LateCapture, ...).
	LateCapture     bool `gorm:"column:late_capture"`
	ReleaseOnFailed bool `gorm:"column:release_on_failed"`
	HoldExtended    bool `gorm:"column:hold_extended"`
	// Deferred: placed on a deduct=payment SKU, nothing frozen.
	Deferred  bool       `gorm:"column:deferred"`
	CreatedAt time.Time  `gorm:"column:created_at;autoCreateTime:false"`
	UpdatedAt time.Time  `gorm:"column:updated_at;autoUpdateTime:false"`
	ClosedAt  *time.Time `gorm:"column:closed_at"`
}

func (orderRow) TableName() string { return "orders" }

type orderItemRow struct {
	ID        int64  `gorm:"column:id;primaryKey;autoIncrement"`
	OrderID   string `gorm:"column:order_id"`
	SKUID     string `gorm:"column:sku_id"`
	Quantity  int64  `gorm:"column:quantity"`
	UnitPrice int64  `gorm:"column:unit_price"`
	// Bucket is the bucket row the units were frozen in; nil: the SKU's
	// inventory row.
	Bucket *int `gorm:"column:bucket"`
}

func (orderItemRow) TableName() string { return "order_items" }

// Journal entry types.
const (
	journalReserve = "RESERVE" // available -> frozen (order created)
	journalRelease = "RELEASE" // frozen -> available (order expired/cancelled)
	journalSell    = "SELL"    // frozen -> sold (order paid)
	journalReset   = "RESET"   // PutSKU: stock redefined before a sale
	journalRestock = "RESTOCK" // Restock: units added during a sale
	journalMove    = "MOVE"    // units carried between a SKU's rows (bucket rows)
	journalRefund  = "REFUND"  // sold -> available (a paid order refunded by a sale's void)
)

type journalRow struct {
	ID              int64     `gorm:"column:id;primaryKey;autoIncrement"`
	SKUID           string    `gorm:"column:sku_id"`
	RefID           string    `gorm:"column:ref_id"`
	Type            string    `gorm:"column:type"`
	DeltaAvailable  int64     `gorm:"column:delta_available"`
	DeltaFrozen     int64     `gorm:"column:delta_frozen"`
	DeltaSold       int64     `gorm:"column:delta_sold"`
	AvailableBefore int64     `gorm:"column:available_before"`
	AvailableAfter  int64     `gorm:"column:available_after"`
	FrozenAfter     int64     `gorm:"column:frozen_after"`
	SoldAfter       int64     `gorm:"column:sold_after"`
	Reason          string    `gorm:"column:reason"`
	CreatedAt       time.Time `gorm:"column:created_at;autoCreateTime:false"`
	// Bucket is the bucket row the entry moved; nil: the inventory row.
	Bucket *int `gorm:"column:bucket"`
}

func (journalRow) TableName() string { return "inventory_journal" }

// journalFor builds the entry for a move whose result is after (the row as
// read back under its lock) and whose deltas are the given ones.
func journalFor(after inventoryRow, ref, typ string, dAvail, dFrozen, dSold int64, reason string, now time.Time) journalRow {
	return journalRow{
		SKUID:           after.SKUID,
		RefID:           ref,
		Type:            typ,
		DeltaAvailable:  dAvail,
		DeltaFrozen:     dFrozen,
		DeltaSold:       dSold,
		AvailableBefore: after.Available - dAvail,
		AvailableAfter:  after.Available,
		FrozenAfter:     after.Frozen,
		SoldAfter:       after.Sold,
		Reason:          truncate(reason, flashsale.MaxReasonLength),
		CreatedAt:       now,
	}
}

type paymentRow struct {
	ID            int64     `gorm:"column:id;primaryKey;autoIncrement"`
	TransactionID string    `gorm:"column:transaction_id"`
	OrderID       string    `gorm:"column:order_id"`
	Amount        int64     `gorm:"column:amount"`
	Status        string    `gorm:"column:status"`
	Reason        string    `gorm:"column:reason"`
	CreatedAt     time.Time `gorm:"column:created_at;autoCreateTime:false"`
}

func (paymentRow) TableName() string { return "payments" }

func (r paymentRow) toPayment() Payment {
	return Payment{
		TransactionID: r.TransactionID,
		OrderID:       r.OrderID,
		Amount:        r.Amount,
		Status:        flashsale.PaymentStatus(r.Status),
		Reason:        r.Reason,
		CreatedAt:     r.CreatedAt.UTC(),
	}
}

// toOrder assembles the public Order. Slices are never nil so JSON shows []
// rather than null.
func toOrder(o orderRow, items []orderItemRow, pays []paymentRow) Order {
	out := Order{
		OrderID:     o.OrderID,
		UserID:      o.UserID,
		Status:      flashsale.Status(o.Status),
		Amount:      o.Amount,
		PayBy:       o.PayBy.UTC(),
		Reason:      o.Reason,
		Degraded:    o.Degraded,
		LateCapture: o.LateCapture, ReleaseOnFailed: o.ReleaseOnFailed, HoldExtended: o.HoldExtended, Deferred: o.Deferred,
		Items:     make([]flashsale.Item, 0, len(items)),
		Payments:  make([]Payment, 0, len(pays)),
		CreatedAt: o.CreatedAt.UTC(),
	}
	if o.ClosedAt != nil {
		t := o.ClosedAt.UTC()
		out.ClosedAt = &t
	}
	for _, it := range items {
		out.Items = append(out.Items, flashsale.Item{SKU: it.SKUID, Quantity: it.Quantity, UnitPrice: it.UnitPrice})
	}
	for _, p := range pays {
		out.Payments = append(out.Payments, p.toPayment())
	}
	return out
}
