package contract

// A fair sale's activities (SaleWorkflow), as the worker registers them
// (methods of activities.Activities).
const (
	PrepareSale      = "PrepareSale"
	OpenSale         = "OpenSale"
	SetSaleState     = "SetSaleState"
	CancelSaleOrders = "CancelSaleOrders"
)
