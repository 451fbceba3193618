package app

import (
	"context"
	"reflect"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/worker"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/activities"
	"github.com/flashsale/flashsale/activities/contract"
)

// activityRegistry records what RegisterActivities puts on a worker.
type activityRegistry struct {
	worker.Registry // unused methods panic: no workflow is registered here
	activities      []any
}

func (r *activityRegistry) RegisterActivity(a any) { r.activities = append(r.activities, a) }

// The workflows run their activities by the names of package contract, and
// recorded histories carry them: every name is a method of a struct
// RegisterActivities registers (the worker names a struct's activities
// after its methods), taking the contract's input and answering its result,
// and nothing else is registered. The reconciler shares the order
// activities' stores and maps order ids to workflow ids.
func TestRegisterActivitiesUnderTheContractsNames(t *testing.T) {
	r := &activityRegistry{}
	acts := &activities.Activities{}
	RegisterActivities(r, acts)

	require.Len(t, r.activities, 2)
	require.Same(t, acts, r.activities[0])
	recon, ok := r.activities[1].(*activities.Reconciler)
	require.True(t, ok)
	require.Equal(t, "order-o-1", recon.OrderWorkflowID("o-1"))

	contractPkg := reflect.TypeFor[contract.ReserveStockInput]().PkgPath()
	vocabularyPkg := reflect.TypeFor[flashsale.SaleState]().PkgPath()
	var registered []string
	for _, a := range r.activities {
		v := reflect.ValueOf(a)
		for i := range v.NumMethod() {
			name, fn := v.Type().Method(i).Name, v.Method(i).Type()
			registered = append(registered, name)
			require.Equal(t, 2, fn.NumIn(), name)
			require.Equal(t, reflect.TypeFor[context.Context](), fn.In(0), name)
			require.Equal(t, contractPkg, fn.In(1).PkgPath(), "%s takes %s", name, fn.In(1))
			require.Equal(t, 2, fn.NumOut(), name)
			require.Equal(t, reflect.TypeFor[error](), fn.Out(1), name)
			// An answer is the contract's, or the vocabulary's at the root
			// (SetSaleState's SaleState, OpenSale's OpenedSale), which both
			// sides import.
			require.Contains(t, []string{contractPkg, vocabularyPkg}, fn.Out(0).PkgPath(), "%s answers %s", name, fn.Out(0))
		}
	}
	names := []string{
		contract.ReserveStock, contract.CreateOrder, contract.ReleaseStock, contract.CloseOrder,
		contract.ConfirmPayment, contract.RecordRefund, contract.OfferToWaitlist, contract.ExtendHold,
		contract.ListSKUs, contract.ObserveStock, contract.RestoreStock, contract.CorrectStock, contract.ResyncStock,
		contract.PrepareSale, contract.OpenSale, contract.SetSaleState, contract.CancelSaleOrders,
		contract.RefundSaleOrders, contract.AwaitSaleSettled, contract.CheckSaleStock, contract.ReportSale,
		contract.EndSale, contract.RemoveSaleKeys, contract.SetSaleEnd, contract.PreflightSale,
		contract.FindOverdueOrders, contract.CloseStrandedOrders, contract.HoldDrift,
	}
	slices.Sort(registered)
	slices.Sort(names)
	require.Equal(t, names, registered)
}
