//go:build integration

package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"image/png"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale/internal/saletraffic"
	"github.com/flashsale/flashsale/internal/testenv"
)

// screenshotTo, when set, is where TestSalePageInBrowser writes the page's
// screenshot (the README's docs/sale-page.png is made with
// `go test -run TestSalePageInBrowser ./internal/httpapi -args -screenshot=../../docs/sale-page.png`).
// Unset, the screenshot goes to the test's temporary directory, so an
// ordinary run never dirties the work tree.
var screenshotTo = flag.String("screenshot", "", "write the sale page's screenshot to this PNG file")

// chromiumPath finds Debian's Chromium (scripts/test.sh installs it), or
// CHROMIUM names another. Its absence fails the test: a browser test that
// skips proves nothing.
func chromiumPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("headless Chromium is required for the sale page test: apt-get install -y chromium (scripts/test.sh does), or set CHROMIUM to a Chrome binary")
	return ""
}

// browser starts a headless Chromium with a fresh profile and returns a
// tab's context.
func browser(t *testing.T) context.Context {
	t.Helper()
	profile, err := os.MkdirTemp("", "flashsale-chromium-")
	require.NoError(t, err)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.Headless,
		// Root in a container has no user namespace for the sandbox.
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.NoFirstRun,
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true),
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(1440, 960),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc()
		// Chromium's children may still write to the profile for a moment
		// after the browser stops.
		for range 50 {
			if os.RemoveAll(profile) == nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
	// The first Run starts the browser, which lives as long as that call's
	// context: no timeout on it.
	require.NoError(t, chromedp.Do(ctx), "start chromium (%s)", chromiumPath(t))
	return ctx
}

// pageView is what the page shows, read from the DOM.
type pageView struct {
	Total, Available, Frozen, Sold, RedisAvailable string
	State, SoldOut                                 string
	Pending, Paid, Waitlist                        string
	Buckets                                        []string
	Answers                                        []string
	Recent                                         int
	Updated                                        string
}

const readPage = `(() => {
  const t = (id) => document.getElementById(id).textContent;
  return {
    Total: t("total"), Available: t("available"), Frozen: t("frozen"), Sold: t("sold"),
    RedisAvailable: t("redis-available"), State: t("state"),
    SoldOut: document.getElementById("state").dataset.soldOut || "",
    Pending: t("orders-PENDING_PAYMENT"), Paid: t("orders-PAID"), Waitlist: t("waitlist"),
    Buckets: [...document.querySelectorAll("#buckets .bucket span")].map((e) => e.textContent),
    Answers: [...document.querySelectorAll("#answers tr")].map((e) => e.textContent),
    Recent: document.querySelectorAll("#recent tr.st-PAID, #recent tr.st-PENDING_PAYMENT").length,
    Updated: t("updated"),
  };
})()`

func (v pageView) String() string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestSalePageInBrowser opens the live sale page in headless Chromium, runs
// a small real sale (Redis, MariaDB, the Temporal dev server, the order
// workflows) and waits for the page, refreshing itself, to show the sale's
// final state: 10 units, 7 paid, 3 awaiting payment, none available, every
// Redis bucket empty, sold out, 10 buyers answered 201, 2 on the waitlist.
// Then it takes the screenshot.
func TestSalePageInBrowser(t *testing.T) {
	const (
		units   = 10
		buckets = 4
		buyers  = 40
		pay     = 7
		price   = 129900
	)
	// A small window keeps buyers queueing on BUSY (so the traffic panel
	// has something to show); buyRetrying retries BUSY every 20 ms, so the
	// per-user rate limit is raised above that.
	s := newStack(t, stackOptions{maxInFlight: 4, buyRate: 100})
	api := s.api
	sku := s.name("page")
	api.putSKU(sku, units, price, buckets, 1)

	ctx := browser(t)
	tctx, cancel := context.WithTimeout(ctx, 4*time.Minute)
	defer cancel()
	resp, err := chromedp.Run(tctx, chromedp.NavigateResponse(api.url+"/sale/"+sku))
	require.NoError(t, err)
	require.Equal(t, int64(http.StatusOK), resp.Status)

	read := func() pageView {
		v, err := chromedp.Run(tctx, chromedp.Evaluate[pageView](readPage))
		require.NoError(t, err)
		return v
	}
	// Before the sale: everything on sale, every bucket full.
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		v := read()
		assert.Equal(c, "10", v.Total, "%s", v)
		assert.Equal(c, "10", v.Available, "%s", v)
		assert.Equal(c, "10", v.RedisAvailable, "%s", v)
		assert.Equal(c, []string{"3", "3", "2", "2"}, v.Buckets, "%s", v)
		assert.Equal(c, "ON SALE", v.State, "%s", v)
	}, 30*time.Second, 200*time.Millisecond)

	// The sale: 40 buyers, each retrying BUSY as a client would.
	var (
		mu  sync.Mutex
		won []string
		wg  sync.WaitGroup
	)
	for i := range buyers {
		wg.Go(func() {
			id, user := s.name(fmt.Sprintf("o%d", i)), s.name(fmt.Sprintf("u%d", i))
			r := api.buyRetrying(id, user, sku, 1)
			switch r.status {
			case http.StatusCreated:
				mu.Lock()
				won = append(won, r.json(t)["order_id"].(string))
				mu.Unlock()
			case http.StatusConflict:
			default:
				t.Errorf("buy %s: %d %s", id, r.status, r.body)
			}
		})
	}
	wg.Wait()
	require.Len(t, won, units)
	for _, id := range won[:pay] {
		r := api.pay(callback{OrderID: id, TransactionID: id + "-tx", Amount: price, Status: "SUCCESS"})
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	}
	for i := range 2 {
		r := api.joinWaitlist(sku, s.name(fmt.Sprintf("late%d", i)))
		require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	}

	// The page catches up by itself.
	var final pageView
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		v := read()
		final = v
		assert.Equal(c, "10", v.Total, "%s", v)
		assert.Equal(c, "0", v.Available, "%s", v)
		assert.Equal(c, "3", v.Frozen, "%s", v)
		assert.Equal(c, "7", v.Sold, "%s", v)
		assert.Equal(c, "0", v.RedisAvailable, "%s", v)
		assert.Equal(c, []string{"0", "0", "0", "0"}, v.Buckets, "%s", v)
		assert.Equal(c, "SOLD OUT", v.State, "%s", v)
		assert.Equal(c, "true", v.SoldOut, "%s", v)
		assert.Equal(c, "7", v.Paid, "%s", v)
		assert.Equal(c, "3", v.Pending, "%s", v)
		assert.Equal(c, "2", v.Waitlist, "%s", v)
		assert.Equal(c, units, v.Recent, "%s", v)
		assert.Contains(c, v.Answers, "201 reserved10", "%s", v)
	}, time.Minute, 250*time.Millisecond)
	t.Logf("page: %s", final)

	// Let the p99 and requests/s panels settle on a snapshot before the
	// picture.
	time.Sleep(1500 * time.Millisecond)
	// Quality 100 is PNG.
	shot, err := chromedp.Run(tctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	img, err := png.Decode(bytes.NewReader(shot))
	require.NoError(t, err, "screenshot is a PNG")
	require.GreaterOrEqual(t, img.Bounds().Dx(), 1200)
	out := *screenshotTo
	if out == "" {
		out = filepath.Join(t.TempDir(), "sale-page.png")
	}
	require.NoError(t, os.WriteFile(out, shot, 0o644))
	t.Logf("screenshot: %s (%d bytes)", out, len(shot))
}

// TestSaleLiveJSON checks the page's JSON: the numbers, nothing about a
// buyer, a JSON 404 for an unknown SKU, and that viewers share one read
// per second: 200 concurrent requests see at most two snapshots.
func TestSaleLiveJSON(t *testing.T) {
	s := newStack(t, stackOptions{})
	api := s.api
	sku := s.name("live")
	api.putSKU(sku, 5, 100, 2, 1)
	buyer := s.name("secret-buyer")
	order := s.name("secret-order")
	require.Equal(t, http.StatusCreated, api.buy(order, buyer, sku, 1).status)

	require.EventuallyWithT(t, func(c *assert.CollectT) {
		r := api.call(http.MethodGet, "/api/v1/skus/"+sku+"/live", nil, nil)
		if !assert.Equal(c, http.StatusOK, r.status) {
			return
		}
		var live struct {
			Total, Frozen, Sold int64
			DBAvailable         int64   `json:"db_available"`
			RedisAvailable      *int64  `json:"redis_available"`
			BucketStock         []int64 `json:"bucket_stock"`
			SoldOut             bool    `json:"sold_out"`
			Orders              map[string]int64
		}
		require.NoError(t, json.Unmarshal(r.body, &live))
		assert.Equal(c, int64(5), live.Total)
		assert.Equal(c, int64(4), live.DBAvailable)
		assert.Equal(c, int64(1), live.Frozen)
		if assert.NotNil(c, live.RedisAvailable) {
			assert.Equal(c, int64(4), *live.RedisAvailable)
		}
		assert.Len(c, live.BucketStock, 2)
		assert.False(c, live.SoldOut)
		assert.Equal(c, map[string]int64{"PENDING_PAYMENT": 1, "PAID": 0, "EXPIRED": 0, "CANCELLED": 0}, live.Orders)
		assert.NotContains(c, string(r.body), buyer, "no buyer on a public page")
		assert.NotContains(c, string(r.body), order, "no order id on a public page")
	}, 10*time.Second, 100*time.Millisecond)

	r := api.call(http.MethodGet, "/api/v1/skus/"+s.name("nope")+"/live", nil, nil)
	require.Equal(t, http.StatusNotFound, r.status)
	require.Equal(t, "UNKNOWN_SKU", r.code(t))

	// The page and its assets.
	for path, typ := range map[string]string{
		"/sale/" + sku: "text/html", "/static/sale/sale.js": "javascript", "/static/sale/sale.css": "text/css",
	} {
		resp, err := http.Get(api.url + path)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, path)
		require.Contains(t, resp.Header.Get("Content-Type"), typ, path)
	}
	resp, err := http.Get(api.url + "/sale/" + s.name("nope"))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	resp, err = http.Get(api.url + "/static/sale/..%2fsale.html")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNotFound, resp.StatusCode)

	// A thousand viewers cost what one does: concurrent polls share the
	// snapshot of the last second, so 200 of them see one snapshot per
	// second they took (plus one across a boundary), not 200.
	var (
		mu    sync.Mutex
		ats   = map[string]bool{}
		wg    sync.WaitGroup
		start = time.Now()
	)
	for range 200 {
		wg.Go(func() {
			resp, err := api.client.Get(api.url + "/api/v1/skus/" + sku + "/live")
			if !assert.NoError(t, err) {
				return
			}
			defer resp.Body.Close()
			var live struct{ At string }
			assert.NoError(t, json.NewDecoder(resp.Body).Decode(&live))
			mu.Lock()
			ats[live.At] = true
			mu.Unlock()
		})
	}
	wg.Wait()
	took := time.Since(start)
	require.LessOrEqual(t, len(ats), int(took/time.Second)+2, "snapshots read in %s: %v", took, ats)
	require.NotContains(t, ats, "", "every answer carried its snapshot's time")
}

// TestSaleTrafficAcrossInstances: behind a load balancer, every reload of
// the sale page shows the whole sale. Buyers alternate between two API
// instances (two processes' connections to the same Redis, MySQL and
// Temporal); each instance's live JSON shows both instances' answers for
// the SKU, exactly, and a made-up SKU is counted nowhere.
func TestSaleTrafficAcrossInstances(t *testing.T) {
	s := newStack(t, stackOptions{})
	instances := []*instance{s.api, s.secondInstance()}
	sku := s.name("traffic")
	s.api.putSKU(sku, 6, 100, 2, 1)
	const buyers = 10
	want := map[string]int64{}
	for i := range buyers {
		r := instances[i%2].buy(s.name(fmt.Sprintf("o%d", i)), s.name(fmt.Sprintf("u%d", i)), sku, 1)
		want[strconv.Itoa(r.status)]++
	}
	require.Equal(t, map[string]int64{"201": 6, "409": 4}, want)
	madeUp := s.name("made-up")
	for n, in := range instances {
		r := in.buy(s.name(fmt.Sprintf("o-made-up-%d", n)), s.name("u-made-up"), madeUp, 1)
		require.Equal(t, http.StatusNotFound, r.status, "%s", r.body)
	}

	type live struct {
		Traffic struct {
			RequestsPerSecond *float64         `json:"requests_per_second"`
			Answers           map[string]int64 `json:"answers"`
		} `json:"traffic"`
	}
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		for n, in := range instances {
			r := in.call(http.MethodGet, "/api/v1/skus/"+sku+"/live", nil, nil)
			if !assert.Equal(c, http.StatusOK, r.status) {
				return
			}
			var l live
			require.NoError(t, json.Unmarshal(r.body, &l))
			assert.Equal(c, want, l.Traffic.Answers, "instance %d shows the whole sale", n)
			assert.NotNil(c, l.Traffic.RequestsPerSecond)
		}
	}, 15*time.Second, 200*time.Millisecond)
	n, err := testenv.Redis(t).Exists(t.Context(), saletraffic.Key(madeUp)).Result()
	require.NoError(t, err)
	require.Zero(t, n, "a made-up SKU has no traffic key")
}
