package audit

// The payment rules: captured money only on paid orders, for their amount,
// once; money received in time kept or refunded.

import (
	"cmp"
	"context"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/orderdb"
)

// checkPayments applies the payment rules, to the orders holding skuFilter
// or to everything.
func (c *checker) checkPayments(ctx context.Context, skuFilter string) error {
	p, err := c.deps.Orders.PaymentAudit(ctx, skuFilter)
	if err != nil {
		return err
	}
	sku := func(a orderdb.PaymentAnomaly) string { return cmp.Or(skuFilter, a.SKU) }
	for _, a := range p.CapturedNotPaid {
		c.add(Violation{SKU: sku(a), OrderID: a.OrderID, TransactionID: a.TransactionID, Kind: KindCapturedNotPaid,
			Expected: string(flashsale.StatusPaid), Actual: a.OrderStatus,
			Detail: "captured money on an order that is not PAID: it must be refunded (REFUND_REQUIRED) or the order paid"})
	}
	for _, a := range p.BadStatus {
		c.add(Violation{SKU: sku(a), OrderID: a.OrderID, TransactionID: a.TransactionID, Kind: KindPaymentStatus,
			Expected: string(flashsale.PaymentCaptured) + "|" + string(flashsale.PaymentRefundRequired) + "|" + string(flashsale.PaymentRefunded),
			Actual:   a.PaymentStatus, Detail: "payment status is neither captured, owed back nor refunded"})
	}
	for _, a := range p.AmountMismatch {
		c.add(Violation{SKU: sku(a), OrderID: a.OrderID, TransactionID: a.TransactionID, Kind: KindCapturedAmount,
			Expected: a.OrderAmount, Actual: a.Amount, Detail: "captured amount differs from the order amount"})
	}
	for _, a := range p.ReceivedNotKept {
		c.add(Violation{SKU: sku(a), OrderID: a.OrderID, TransactionID: a.TransactionID, Kind: KindReceivedNotKept,
			Expected: string(flashsale.StatusPaid), Actual: a.OrderStatus,
			Detail: "money received by the deadline, yet the order closed unpaid and nothing records the payment: it must be kept (PAID) or refunded"})
	}
	for _, a := range p.RefundNotOwed {
		c.add(Violation{SKU: sku(a), OrderID: a.OrderID, Kind: KindRefundNotOwed, Expected: a.OrderAmount, Actual: a.Amount,
			Detail: "the order was refunded, yet less than its amount is owed back or sent back"})
	}
	c.report.Money = p.Money
	// The rules above each name the payment that breaks the balance; this
	// catches a difference none of them explains.
	named := len(p.CapturedNotPaid) + len(p.AmountMismatch) + len(p.PaidCaptures)
	if m := p.Money; m.Captured != m.PaidOrders && named == 0 {
		c.add(Violation{SKU: skuFilter, Kind: KindMoneyBalance, Expected: m.PaidOrders, Actual: m.Captured,
			Detail: "captured money differs from the amounts of the PAID orders"})
	}
	for _, a := range p.PaidCaptures {
		c.add(Violation{SKU: sku(a), OrderID: a.OrderID, Kind: KindPaidCaptures, Expected: 1, Actual: a.Captures,
			Detail: "a PAID order needs exactly one CAPTURED payment"})
	}
	return nil
}
