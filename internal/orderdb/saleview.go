package orderdb

import (
	"context"
	"fmt"
	"time"

	"github.com/flashsale/flashsale"

	"gorm.io/gorm"
)

// SaleView is what the live sale page shows of one SKU from MySQL: its
// stock row, its orders of the current sale by status, and the latest of
// them. Nothing in it names a buyer or an order: the page is public.
type SaleView struct {
	Inventory Inventory
	// Orders counts the orders of the current sale (created since the last
	// PutSKU) holding the SKU, by status.
	Orders map[flashsale.Status]int64
	// Recent are the orders of the current sale that changed last, newest
	// first.
	Recent []SaleOrder
}

// SaleOrder is one order as the sale page shows it: no id, no buyer.
type SaleOrder struct {
	Status    flashsale.Status
	Quantity  int64
	Amount    int64
	CreatedAt time.Time
	UpdatedAt time.Time
}

// SaleView reads sku's row, its order counts and its recent orders from one
// REPEATABLE READ snapshot, so the counts agree with frozen and sold. It
// returns UnknownSKU for a SKU without a row. Callers on a hot path cache
// the answer: it is three reads.
func (s *Store) SaleView(ctx context.Context, sku string, recent int) (SaleView, error) {
	out := SaleView{Orders: map[flashsale.Status]int64{}}
	err := s.readTx(ctx, func(tx *gorm.DB) error {
		row, err := takeStock(tx, sku)
		if err != nil {
			return err
		}
		out.Inventory = row.toInventory()
		// The current sale's orders, as the per-user limit counts them.
		sale := tx.Table("orders AS o").
			Joins("JOIN order_items AS i ON i.order_id = o.order_id").
			Where("i.sku_id = ? AND o.created_at >= ?", sku, row.SaleStartedAt)
		var counts []struct {
			Status string
			N      int64
		}
		if err := sale.Session(&gorm.Session{}).Select("o.status AS status, COUNT(*) AS n").
			Group("o.status").Scan(&counts).Error; err != nil {
			return err
		}
		for _, c := range counts {
			out.Orders[flashsale.Status(c.Status)] = c.N
		}
		if recent <= 0 {
			return nil
		}
		var rows []struct {
			Status    string
			Quantity  int64
			Amount    int64
			CreatedAt time.Time
			UpdatedAt time.Time
		}
		if err := sale.Session(&gorm.Session{}).
			Select("o.status AS status, i.quantity AS quantity, o.amount AS amount, o.created_at AS created_at, o.updated_at AS updated_at").
			Order("o.updated_at DESC, o.id DESC").Limit(recent).Scan(&rows).Error; err != nil {
			return err
		}
		for _, r := range rows {
			out.Recent = append(out.Recent, SaleOrder{Status: flashsale.Status(r.Status), Quantity: r.Quantity, Amount: r.Amount,
				CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt})
		}
		return nil
	})
	if err != nil {
		return SaleView{}, fmt.Errorf("sale view %s: %w", sku, err)
	}
	return out, nil
}
