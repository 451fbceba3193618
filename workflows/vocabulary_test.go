package workflows

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale"
)

// TestRecordedPayloadsKeepTheirShape decodes every recorded order's input
// and result into today's types and encodes them again: the bytes must be
// the ones in the history, so the flashsale vocabulary (flashsale.Item with
// its unit_price, flashsale.Status) changed no JSON a running order or a
// reader of the Web UI sees.
func TestRecordedPayloadsKeepTheirShape(t *testing.T) {
	files, err := filepath.Glob("testdata/*.json")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			checked := 0
			for _, e := range recordedEvents(t, f) {
				if e.Started != nil {
					requireSameJSON[OrderInput](t, e.Started.Input)
					checked++
				}
				if e.Completed != nil {
					requireSameJSON[OrderView](t, e.Completed.Result)
					checked++
				}
			}
			require.Positive(t, checked)
		})
	}
}

// recordedEvent is what the shape checks read of a recorded history's
// event: a start's input, a completion's result.
type recordedEvent struct {
	Started *struct {
		Input payloads `json:"input"`
	} `json:"workflowExecutionStartedEventAttributes"`
	Completed *struct {
		Result payloads `json:"result"`
	} `json:"workflowExecutionCompletedEventAttributes"`
}

func recordedEvents(t *testing.T, file string) []recordedEvent {
	t.Helper()
	raw, err := os.ReadFile(file)
	require.NoError(t, err)
	var h struct {
		Events []recordedEvent `json:"events"`
	}
	require.NoError(t, json.Unmarshal(raw, &h))
	return h.Events
}

type payloads struct {
	Payloads []struct {
		Data string `json:"data"`
	} `json:"payloads"`
}

func requireSameJSON[T any](t *testing.T, p payloads) {
	t.Helper()
	require.Len(t, p.Payloads, 1)
	recorded, err := base64.StdEncoding.DecodeString(p.Payloads[0].Data)
	require.NoError(t, err)
	var v T
	require.NoError(t, json.Unmarshal(recorded, &v))
	again, err := json.Marshal(v)
	require.NoError(t, err)
	require.Equal(t, string(recorded), string(again))
}

// TestOrderInputValidate checks Validate (flashsale.Order.Validate and the
// workflow's field) on one table.
func TestOrderInputValidate(t *testing.T) {
	long := string(make([]byte, flashsale.MaxIDLength+1))
	ok := flashsale.Item{SKU: "1001", Quantity: 1}
	order := func(id string, items ...flashsale.Item) OrderInput {
		return OrderInput{OrderID: id, UserID: "u", Items: items}
	}
	tests := []struct {
		name    string
		in      OrderInput
		wantErr string
	}{
		{"valid", order("o", ok), ""},
		{"no order id", order("", ok), "order_id"},
		{"long user id", OrderInput{OrderID: "o", UserID: long, Items: []flashsale.Item{ok}}, "user_id"},
		{"no items", order("o"), "items"},
		{"zero quantity", order("o", flashsale.Item{SKU: "1", Quantity: 0}), "quantity"},
		{"negative quantity", order("o", flashsale.Item{SKU: "1", Quantity: -3}), "quantity"},
		{"absurd quantity", order("o", flashsale.Item{SKU: "1", Quantity: 1 << 40}), "quantity"},
		{"duplicate sku", order("o", ok, ok), "twice"},
		{"empty sku", order("o", flashsale.Item{Quantity: 1}), "sku"},
		{"negative timeout", OrderInput{OrderID: "o", UserID: "u", Items: []flashsale.Item{ok}, PaymentTimeout: -1}, "payment_timeout"},
		{"reserved prefix", order("wl-o", ok), "reserved"},
		{"space in id", order("o 1", ok), "order_id"},
		{"offer", OrderInput{OrderID: flashsale.WaitlistOrderID("o"), UserID: "u", Items: []flashsale.Item{ok}, FromOrder: "o"}, ""},
	}
	check := func(t *testing.T, err error, want string) {
		t.Helper()
		if want == "" {
			require.NoError(t, err)
			return
		}
		require.ErrorContains(t, err, want)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.in.Validate()
			check(t, err, tt.wantErr)
			if err != nil {
				require.Equal(t, flashsale.Invalid, flashsale.ErrorCode(err))
			}
		})
	}
}

// A buyer's order under a waitlist offer's id is refused before any stock
// moves: refused by the workflow itself.
func (s *orderSuite) TestReservedPrefixIsRejected() {
	s.env.ExecuteWorkflow(s.wf, OrderInput{OrderID: "wl-x", UserID: "u1",
		Items: []flashsale.Item{{SKU: "1001", Quantity: 1}}})

	v := s.result()
	s.Equal(flashsale.StatusRejected, v.Status)
	s.Equal(flashsale.Invalid, v.Reason)
	s.env.AssertNotCalled(s.T(), "ReserveStock", mock.Anything, mock.Anything)
}
