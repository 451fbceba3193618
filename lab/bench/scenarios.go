package bench

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/inventory"
	"github.com/flashsale/flashsale/internal/orders"
	"github.com/flashsale/flashsale/lab/ceiling"
	"github.com/flashsale/flashsale/workflows"
)

// RedisReserve measures inventory.Reserve (routing, MGET, take.lua) on a SKU
// preheated with far more units than the run needs, so every call is the
// happy path.
func RedisReserve(ctx context.Context, stock *inventory.Store, run string, buckets, n, conc int) (Stat, error) {
	sku := fmt.Sprintf("bench-redis-%s-%d", run, buckets)
	if _, err := stock.Preheat(ctx, sku, int64(2*n+buckets), buckets); err != nil {
		return Stat{}, err
	}
	return Measure(ctx, fmt.Sprintf("redis Reserve, %d bucket(s)", buckets), n, conc, func(ctx context.Context, i int) error {
		_, err := stock.Reserve(ctx, fmt.Sprintf("o-%d", i), sku, 1)
		return err
	}), nil
}

// RedisRawTake measures a bare EVALSHA of the same take.lua on one bucket:
// the ceiling for RedisReserve.
func RedisRawTake(ctx context.Context, stock *inventory.Store, run string, n, conc int) (Stat, error) {
	sku := "bench-raw-" + run
	if _, err := stock.Preheat(ctx, sku, int64(2*n), 1); err != nil {
		return Stat{}, err
	}
	if err := stock.LoadScripts(ctx); err != nil {
		return Stat{}, err
	}
	return Measure(ctx, "redis raw EVALSHA take.lua", n, conc, func(ctx context.Context, i int) error {
		return stock.RawTake(ctx, sku, 0, fmt.Sprintf("o-%d", i))
	}), nil
}

// MySQLHotRow is what most teams start with and the baseline the design is
// measured against: no Redis, no Temporal, one transaction per order doing
// SELECT ... FOR UPDATE then UPDATE on one hot inventory row.
func MySQLHotRow(ctx context.Context, db *sql.DB, run string, n, conc int) (Stat, error) {
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS bench_hot_row (
		sku_id VARCHAR(64) PRIMARY KEY, available BIGINT NOT NULL, sold BIGINT NOT NULL,
		CHECK (available >= 0)) ENGINE=InnoDB`); err != nil {
		return Stat{}, fmt.Errorf("create bench table: %w", err)
	}
	sku := "hot-" + run
	if _, err := db.ExecContext(ctx, `INSERT INTO bench_hot_row VALUES (?, ?, 0)`, sku, 2*n); err != nil {
		return Stat{}, fmt.Errorf("seed bench row: %w", err)
	}
	return Measure(ctx, "mysql SELECT FOR UPDATE + UPDATE, one hot row", n, conc, func(ctx context.Context, _ int) error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer func() { _ = tx.Rollback() }()
		var available int64
		if err := tx.QueryRowContext(ctx, `SELECT available FROM bench_hot_row WHERE sku_id = ? FOR UPDATE`, sku).Scan(&available); err != nil {
			return err
		}
		if available < 1 {
			return errors.New("sold out")
		}
		if _, err := tx.ExecContext(ctx, `UPDATE bench_hot_row SET available = available - 1, sold = sold + 1 WHERE sku_id = ?`, sku); err != nil {
			return err
		}
		return tx.Commit()
	}), nil
}

// Orders measures whole orders through the real workflow: Update-with-Start
// (reserve in Redis + create in MySQL), then the pay update (confirm in
// MySQL). It returns the reservation answer's latency and the whole order's.
//
// A pay update the order could not take within the API's handoff time is
// answered as a signal (Queued, no status yet), as a real payment
// provider's would be: the order is then followed to its outcome, which
// is part of the whole order's time, and counted in Handoffs. Only an
// outcome other than PAID is an error.
func Orders(ctx context.Context, svc *orders.Service, sku string, amount int64, run string, n, conc int) (reserve, whole Stat) {
	return OrdersPlacedBy(ctx, svc, svc.Place, sku, amount, run, n, conc)
}

// Place starts an order and answers its reservation: orders.Service.Place,
// or PlaceOrderWorkflow.
type Place func(context.Context, workflows.OrderInput) (workflows.Reservation, error)

// OrdersPlacedBy is Orders with the orders started by place.
func OrdersPlacedBy(ctx context.Context, svc *orders.Service, place Place, sku string, amount int64, run string, n, conc int) (reserve, whole Stat) {
	reserveLat := make([]time.Duration, n)
	var handoffs atomic.Int64
	whole = Measure(ctx, "whole order (reserve + create + pay + confirm)", n, conc, func(ctx context.Context, i int) error {
		id := fmt.Sprintf("%s-%s-%d", sku, run, i)
		t0 := time.Now()
		res, err := place(ctx, workflows.OrderInput{OrderID: id, UserID: id, Items: []flashsale.Item{{SKU: sku, Quantity: 1}}})
		reserveLat[i] = time.Since(t0)
		if err != nil {
			return err
		}
		if res.Status != flashsale.StatusPendingPayment {
			return fmt.Errorf("order %s: %s %s", id, res.Status, res.Reason)
		}
		out, err := svc.Pay(ctx, id, workflows.Payment{TransactionID: "t-" + id, Amount: amount})
		if err != nil {
			return fmt.Errorf("pay %s: %w", id, err)
		}
		status := out.Status
		if out.Queued {
			handoffs.Add(1)
			var view workflows.OrderView
			if err := svc.Temporal.GetWorkflow(ctx, workflows.OrderWorkflowID(id), "").Get(ctx, &view); err != nil {
				return fmt.Errorf("pay %s: handed to the order as a signal, then: %w", id, err)
			}
			status = view.Status
		}
		if status != flashsale.StatusPaid {
			return fmt.Errorf("pay %s: order ended %q, want PAID (handed over as a signal: %t)", id, status, out.Queued)
		}
		return nil
	})
	whole.Handoffs = handoffs.Load()
	reserve = Summarize("reservation answer (Update-with-Start)", reserveLat[:whole.Ops], time.Duration(whole.Seconds*float64(time.Second)))
	reserve.PerSec = whole.PerSec
	return reserve, whole
}

// Ceiling measures the cheapest durable order the server can run: a
// workflow started by Update-with-Start whose update answers at once.
func Ceiling(ctx context.Context, c client.Client, queue, run string, n, conc int) Stat {
	return Measure(ctx, "ceiling: Update-with-Start, update returns at once", n, conc, func(ctx context.Context, i int) error {
		id := fmt.Sprintf("ceiling-%s-%d", run, i)
		return reserveWithStart(ctx, c, queue, id, ceiling.Workflow, id)
	})
}

// reserveWithStart starts workflow wf(arg) under id with its reserve
// update (ceiling.UpdateName), Update-with-Start as the order is placed,
// and waits for the update's answer.
func reserveWithStart(ctx context.Context, c client.Client, queue, id string, wf, arg any) error {
	op := c.NewWithStartWorkflowOperation(client.StartWorkflowOptions{
		ID: id, TaskQueue: queue, WorkflowIDConflictPolicy: enums.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
	}, wf, arg)
	h, err := c.UpdateWithStartWorkflow(ctx, client.UpdateWithStartWorkflowOptions{
		StartWorkflowOperation: op,
		UpdateOptions: client.UpdateWorkflowOptions{UpdateName: ceiling.UpdateName,
			WaitForStage: client.WorkflowUpdateStageCompleted},
	})
	if err != nil {
		return err
	}
	return h.Get(ctx, nil)
}

// Shape measures n orders of the order's own shape (ceiling.Shape): C1
// with no-op local activities, or C2 (physical) whose local activities do
// the order's Redis and MySQL work on sku. Each is the real order's client
// round trips: Update-with-Start to reserve, an update to pay.
//
// A rung (ceiling.Rungs) runs instead of C1 when given: one update, and
// the second only if the rung has it.
func Shape(ctx context.Context, c client.Client, queue, sku, run string, physical bool, amount int64, n, conc int, rung ...ceiling.Rung) Stat {
	name := "C1: the order's shape (2 updates, 2 no-op local activities, a timer)"
	if physical {
		name = "C2: C1 doing the order's Redis and MySQL work"
	}
	var r *ceiling.Rung
	if len(rung) > 0 {
		r, name = &rung[0], "rung: "+rung[0].Name
	}
	return Measure(ctx, name, n, conc, func(ctx context.Context, i int) error {
		id := fmt.Sprintf("shape-%s-%d", run, i)
		in := ceiling.ShapeInput{OrderID: id, UserID: id, SKU: sku, Physical: physical, Deadline: 15 * time.Minute, Rung: r}
		if err := reserveWithStart(ctx, c, queue, id, ceiling.Shape, in); err != nil {
			return fmt.Errorf("reserve %s: %w", id, err)
		}
		if r != nil && !r.Pay {
			return nil
		}
		ph, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: id, UpdateName: ceiling.PayUpdate,
			Args: []any{ceiling.PayInput{TransactionID: "t-" + id, Amount: amount}}, WaitForStage: client.WorkflowUpdateStageCompleted})
		if err != nil {
			return fmt.Errorf("pay %s: %w", id, err)
		}
		return ph.Get(ctx, nil)
	})
}

// HTTP measures n POSTs to url, the i-th with body(i) and, when header is
// not nil, header(i) (a buyer's token), and counts any status other than
// want as an error.
func HTTP(ctx context.Context, name string, hc *http.Client, url string, body func(i int) []byte, header func(i int) http.Header, want, n, conc int) Stat {
	return Measure(ctx, name, n, conc, func(ctx context.Context, i int) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body(i)))
		if err != nil {
			return err
		}
		if header != nil {
			req.Header = header(i)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != want {
			return fmt.Errorf("status %d, want %d", resp.StatusCode, want)
		}
		return nil
	})
}
