package fairness

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flashsale/flashsale/internal/jsoncall"
	"github.com/flashsale/flashsale/internal/loadgen"
)

// Class is one kind of buyer. A buyer's requests follow an open-loop
// schedule (a tick every 1/Rate, from a random phase): a tick sends one
// request if one of the buyer's Conns connections is free and is dropped
// (Skipped) otherwise, as a real client with that many connections would.
// Every buyer is one identity with its own token, so the edge's per-buyer
// limits and the per-user unit limit see them as the API would.
type Class struct {
	Name   string  `json:"name"`
	Buyers int     `json:"buyers"`
	Rate   float64 `json:"rate_per_s"`
	Conns  int     `json:"connections"`
	// Early is how long before the others this class starts.
	Early time.Duration `json:"early_ns"`
}

// DefaultClasses are the crowd: 10,000 buyers for 1,000 units, each class
// large enough that a 20% relative advantage over the polite buyers' win
// rate (0.10 against 0.12) stands out of chance: with 2,000 in a class
// and 6,000 polite, the difference's 95% interval is about +-0.016.
// Polite buyers look once a second; eager ones 10 times (a person
// clicking as fast as they can); bots are a scalper's accounts, each 100
// requests a second over 2 connections, starting 2 s early. The offered
// load is far beyond what this 2-core box serves: that is the flash sale,
// and the schedules drop the ticks a buyer's connections cannot carry. At
// most 12,000 requests are in flight, about as many as issue 23's crowd
// (8,900 polite, 1,000 eager, 100 bots of 10 connections: 100 bots could
// not tell a 20% advantage from chance); 2,000 bots of 10 connections
// each (20,000 in flight) left the API's Redis pool timing out, no queue
// could be entered, and nothing was sold (2026-12-06 21:46Z).
var DefaultClasses = []Class{
	{Name: "polite", Buyers: 6000, Rate: 1, Conns: 1},
	{Name: "eager", Buyers: 2000, Rate: 10, Conns: 1},
	{Name: "bot", Buyers: 2000, Rate: 100, Conns: 2, Early: 2 * time.Second},
}

// Options is one run against one API.
type Options struct {
	Base    string // the API's base URL
	SKU     string // defined and preheated with Units before Run
	Units   int64
	Classes []Class
	// Token mints user's buyer token.
	Token func(user string) (string, error)
	// Queue runs the sale through the fair queue: Run starts the SKU's
	// sale (Admin) with its pre-queue open PreQueue before opens_at.
	Queue    bool
	PreQueue time.Duration
	Admin    func(ctx context.Context, method, path string, in, out any) error
	// Watch reads the SKU's units left, then the passes outstanding and
	// the placement capacity the serving counter bounds them by (in that
	// order: see watch); queue on only. InFlightCap is the edge's units in
	// flight per SKU.
	Watch       func(ctx context.Context) (left, outstanding, capacity int64, err error)
	InFlightCap int64
	// Deadline bounds the run from the start of the first class.
	Deadline time.Duration
	Seed     uint64
	// MaxConns bounds the client's connections to the API in all (the
	// process has one file table; the API may share it).
	MaxConns int
	// LongPoll, when positive (whole seconds, at most the API's
	// MaxQueueWait), has queued buyers hold their looks
	// (queue/me?wait=LongPoll), as a client of the long poll would: a
	// look held to its end without news is sent again at once, a pass is
	// spent at once, and the schedule's ticks are dropped while a look is
	// held. The crowd then speaks HTTP/2 without TLS (the API must serve
	// h2c): 10,000 held looks over a few connections, where one connection
	// each would pass the process's file table.
	LongPoll time.Duration
}

// ClassResult is one class's outcome.
type ClassResult struct {
	Class
	Wins    int     `json:"wins"`
	WinRate float64 `json:"win_rate"`
	// Lo and Hi are the win rate's 95% Wilson interval.
	Lo       float64 `json:"ci95_lo"`
	Hi       float64 `json:"ci95_hi"`
	Requests int64   `json:"requests"`
	// Skipped are ticks dropped because every connection of the buyer
	// was busy (the API's answer time) or the generator woke too late to
	// send them (its own lag, LateMs).
	Skipped int64 `json:"skipped"`
	// LateMs is the generator's own lag: the mean and the largest delay,
	// over the class's sends, between a tick's time and its send, after
	// a connection was free. On a box too busy to run the crowd's
	// schedules this grows, and a class whose sends were later than
	// another's would be disadvantaged by the measurement, not the API.
	LateMs    float64 `json:"late_ms_mean"`
	LateMaxMs float64 `json:"late_ms_max"`
	// DiffLo and DiffHi are the 95% interval (DiffCI) of this class's win
	// rate minus the first class's (the polite buyers'): 0 inside it, the
	// data do not tell the two apart.
	DiffLo float64 `json:"diff_ci95_lo"`
	DiffHi float64 `json:"diff_ci95_hi"`
}

// Result is one run.
type Result struct {
	Queue bool `json:"queue"`
	// LongPollS is Options.LongPoll in seconds (0: the buyers poll).
	LongPollS float64          `json:"long_poll_s,omitempty"`
	Units     int64            `json:"units"`
	Classes   []ClassResult    `json:"classes"`
	Answers   map[string]int64 `json:"answers"`
	Requests  int64            `json:"requests"`
	// Reserved counts 201s the buyers saw (one per winner).
	Reserved int64 `json:"reserved"`
	// Oversold and Undersold compare the database's reserved units with
	// the units on sale once everyone was answered (set by the caller).
	Oversold  int64   `json:"oversold"`
	Undersold int64   `json:"undersold"`
	LastUnitS float64 `json:"last_unit_s"`
	Seconds   float64 `json:"seconds"`
	// Queue on only.
	//
	// KendallTau is Kendall's tau between queue rank and admission (the
	// moment the buyer's buy was answered 201, the client's clock), over
	// the pairs of queued buyers admitted at different moments or one
	// admitted and one not; with ranks untied that is tau-b over the pairs
	// the admission order distinguishes (Goodman and Kruskal's gamma). 1:
	// no buyer got a unit before a better rank did, or instead of one.
	// Passes go out several at a time and their holders buy at their own
	// pace, so a holder buying before a better ranked one is a discordant
	// pair: tau falls below 1 by how much the holders' pace reorders the
	// ranks, and further when a pass expires unused and a worse rank gets
	// its unit. KendallTauB is tau-b over every pair, whose maximum the
	// ties bound (MaxTauB).
	KendallTau  float64 `json:"kendall_tau"`
	KendallTauB float64 `json:"kendall_tau_b"`
	MaxTauB     float64 `json:"kendall_tau_b_max"`
	Ranked      int     `json:"ranked"`
	Admitted    int     `json:"admitted"`
	// OutOfRank counts the buyers admitted with a rank beyond the first
	// Units: each took a unit a better rank did not get. 0 is a sale
	// where exactly the first Units ranks won, whatever their speed.
	OutOfRank int `json:"out_of_rank"`
	// AdmissionMoments is how many distinct moments (ms) buys were
	// admitted at.
	AdmissionMoments int `json:"admission_moments"`
	// MaxOutstanding and MaxOverCap: the most passes outstanding seen,
	// and the most they exceeded units left + InFlightCap (<= 0 holds).
	// MaxOverCapacity is the most they exceeded the placement capacity
	// read in the same sample (<= 0 holds), MaxCapacity the largest
	// capacity read.
	MaxOutstanding  int64 `json:"max_outstanding"`
	MaxOverCap      int64 `json:"max_over_cap"`
	MaxOverCapacity int64 `json:"max_over_capacity"`
	MaxCapacity     int64 `json:"max_capacity"`
	Samples         int   `json:"samples"`
	InFlightCap     int64 `json:"in_flight_cap"`
	// SoldOutLagMs: from the last unit's 201 to the last queued buyer's
	// first SOLD_OUT answer; NotToldSoldOut counts queued buyers who
	// never heard it before the deadline.
	SoldOutLagMs   float64 `json:"sold_out_lag_ms"`
	NotToldSoldOut int     `json:"not_told_sold_out"`
	Entered        int64   `json:"entered"`
	// EnteredLate counts buyers whose entry was answered after opens_at
	// (the client's clock): ranked after every entrant, in arrival order.
	EnteredLate int64 `json:"entered_late"`
}

// buyer is one simulated identity.
type buyer struct {
	class int
	user  string
	auth  http.Header
	conns chan struct{}

	mu       sync.Mutex
	entered  bool
	pass     string
	rank     int64
	wonAt    time.Duration // the 201's arrival, since the start
	won      bool
	done     bool
	soldOut  time.Time // first SOLD_OUT answer
	buying   bool
	requests int64
	skipped  int64
	sends    int64
	lateNs   int64 // sum over sends
	lateMax  time.Duration
}

type sim struct {
	o       Options
	client  *http.Client
	start   time.Time // t0: the later classes' start
	opensAt time.Time

	mu       sync.Mutex
	answers  map[string]int64
	lastUnit atomic.Int64 // ns since start of the last 201
	reserved atomic.Int64
	entered  atomic.Int64
	late     atomic.Int64 // entered after opens_at (client clock)
}

// passTTL is the bench sale's pass lifetime: a pass is spent within a
// few seconds here, and a short one would only add expiries to the noise.
const passTTL = 60 * time.Second

// Run plays the crowd once and reports. With Queue, it starts the sale:
// the pre-queue opens at the later classes' start and buying PreQueue later.
func Run(ctx context.Context, o Options) (Result, error) {
	if o.MaxConns <= 0 {
		o.MaxConns = 1024
	}
	tr := &http.Transport{MaxIdleConnsPerHost: o.MaxConns, MaxConnsPerHost: o.MaxConns}
	if o.LongPoll > 0 {
		tr.Protocols = new(http.Protocols)
		tr.Protocols.SetUnencryptedHTTP2(true)
	}
	s := &sim{o: o, answers: map[string]int64{},
		client: &http.Client{Timeout: 30*time.Second + o.LongPoll, Transport: tr}}
	defer s.client.CloseIdleConnections()
	var buyers []*buyer
	for ci, c := range o.Classes {
		for i := range c.Buyers {
			user := fmt.Sprintf("%s-%s-%d", o.SKU, c.Name, i)
			tok, err := o.Token(user)
			if err != nil {
				return Result{}, err
			}
			buyers = append(buyers, &buyer{class: ci, user: user, auth: http.Header{"Authorization": {"Bearer " + tok}},
				conns: make(chan struct{}, max(c.Conns, 1))})
		}
	}
	var early time.Duration
	for _, c := range o.Classes {
		early = max(early, c.Early)
	}
	// The earliest class starts now; the rest early later.
	s.start = time.Now().Add(early)
	if o.Queue {
		s.opensAt = s.start.Add(o.PreQueue)
		// The sale (and its pre-queue) begins at the later classes'
		// start: an early class finds no queue to enter until then.
		loadgen.Sleep(ctx, early)
		if err := o.Admin(ctx, http.MethodPost, "/api/v1/admin/skus/"+o.SKU+"/sale",
			map[string]any{"opens_at": s.opensAt, "pass_ttl_seconds": int(passTTL.Seconds())}, nil); err != nil {
			return Result{}, fmt.Errorf("start the sale: %w", err)
		}
	}
	runCtx, cancel := context.WithDeadline(ctx, s.start.Add(-early).Add(o.Deadline))
	defer cancel()
	var watch watchFigures
	var wwg sync.WaitGroup
	if o.Queue && o.Watch != nil {
		wctx, wcancel := context.WithCancel(runCtx)
		defer wcancel()
		wwg.Go(func() { watch = s.watch(wctx) })
		defer func() { wcancel(); wwg.Wait() }()
	}
	var wg sync.WaitGroup
	for i, b := range buyers {
		c := o.Classes[b.class]
		rng := rand.New(rand.NewPCG(o.Seed, uint64(i)))
		period := time.Duration(float64(time.Second) / c.Rate)
		first := s.start.Add(-c.Early).Add(time.Duration(rng.Int64N(int64(period))))
		wg.Go(func() { s.play(runCtx, b, first, period) })
	}
	wg.Wait()
	// Requests still in flight when the last buyer stopped.
	for _, b := range buyers {
		for range cap(b.conns) {
			b.conns <- struct{}{}
		}
	}
	cancel()
	wwg.Wait()
	return s.result(buyers, watch), nil
}

// play runs b's schedule until b is done or the run ends. It waits for
// a free connection first, then for the next tick: the ticks that passed
// meanwhile are the ones a client with b's connections could not send
// (counted, not woken for, which keeps 10,000 schedules cheap to run).
func (s *sim) play(ctx context.Context, b *buyer, next time.Time, period time.Duration) {
	for ctx.Err() == nil {
		select {
		case b.conns <- struct{}{}:
		case <-ctx.Done():
			return
		}
		if now := time.Now(); now.After(next) {
			missed := int64(now.Sub(next)/period) + 1
			next = next.Add(time.Duration(missed) * period)
			b.mu.Lock()
			b.skipped += missed
			b.mu.Unlock()
		}
		loadgen.Sleep(ctx, time.Until(next))
		late := time.Since(next)
		b.mu.Lock()
		done := b.done
		if !done {
			b.sends++
			b.lateNs += int64(late)
			b.lateMax = max(b.lateMax, late)
		}
		b.mu.Unlock()
		if done || ctx.Err() != nil {
			<-b.conns
			return
		}
		go func() {
			defer func() { <-b.conns }()
			s.step(ctx, b)
		}()
		next = next.Add(period)
	}
}

// step is one request: what the buyer does next.
func (s *sim) step(ctx context.Context, b *buyer) {
	b.mu.Lock()
	b.requests++
	entered, pass, buying := b.entered, b.pass, b.buying
	if pass != "" && !buying {
		b.buying = true
	}
	b.mu.Unlock()
	switch {
	case !s.o.Queue:
		s.buy(ctx, b, "")
	case !entered:
		status, _ := s.do(ctx, http.MethodPost, "/api/v1/skus/"+s.o.SKU+"/queue", nil, b.auth)
		if status == http.StatusCreated || status == http.StatusOK {
			b.mu.Lock()
			if !b.entered {
				b.entered = true
				s.entered.Add(1)
				if time.Now().After(s.opensAt) {
					s.late.Add(1)
				}
			}
			b.mu.Unlock()
		}
	case pass != "" && !buying:
		s.spend(ctx, b, pass)
	case s.o.LongPoll > 0:
		s.hold(ctx, b)
	default:
		s.look(ctx, b, 0)
	}
}

// spend buys with the buyer's pass; step marked the buyer buying.
func (s *sim) spend(ctx context.Context, b *buyer, pass string) {
	s.buy(ctx, b, pass)
	b.mu.Lock()
	b.buying = false
	b.mu.Unlock()
}

// hold is a long-polling buyer's look: held by the API until their turn
// or the sell-out, sent again at once when it ended without news, and
// followed at once by the buy when it brought a pass. A look answered
// before it could be held (the pre-queue, a refusal, a pass already out)
// goes back to the schedule.
func (s *sim) hold(ctx context.Context, b *buyer) {
	for ctx.Err() == nil {
		sent := time.Now()
		s.look(ctx, b, s.o.LongPoll)
		b.mu.Lock()
		done, pass := b.done, b.pass
		buying := pass != "" && !b.buying
		if buying {
			b.buying = true
		}
		b.mu.Unlock()
		switch {
		case buying:
			s.spend(ctx, b, pass)
			return
		case done || time.Since(sent) < s.o.LongPoll/2:
			return
		}
	}
}

// buy places the buyer's order (with its pass when queued).
func (s *sim) buy(ctx context.Context, b *buyer, pass string) {
	body, _ := json.Marshal(map[string]any{"items": []map[string]any{{"sku_id": s.o.SKU, "quantity": 1}}})
	hdr := b.auth
	if pass != "" {
		hdr = http.Header{"Authorization": b.auth["Authorization"], "Sale-Pass": {pass}}
	}
	status, code := s.do(ctx, http.MethodPost, "/api/v1/orders", body, hdr)
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case status == http.StatusCreated:
		if !b.won {
			b.won, b.done = true, true
			b.wonAt = time.Since(s.start)
			s.reserved.Add(1)
			s.lastUnit.Store(int64(b.wonAt))
		}
	case s.o.Queue && status != http.StatusTooManyRequests && status != 0:
		// The pass is spent, expired or refused: back to the queue,
		// which says what is left (a pass given back may buy a unit
		// that came back). A SOLD_OUT answer told the buyer the
		// sell-out all the same.
		b.pass = ""
		if code == "SOLD_OUT" && b.soldOut.IsZero() {
			b.soldOut = time.Now()
		}
	case !s.o.Queue && code == "SOLD_OUT":
		b.done = true
		if b.soldOut.IsZero() {
			b.soldOut = time.Now()
		}
	}
}

// look reads the buyer's place in the queue, held up to wait (whole
// seconds) while the buyer waits for their turn.
func (s *sim) look(ctx context.Context, b *buyer, wait time.Duration) {
	var p struct {
		Rank    int64  `json:"rank"`
		Pass    string `json:"pass"`
		Spent   bool   `json:"pass_spent"`
		SoldOut bool   `json:"sold_out"`
	}
	path := "/api/v1/skus/" + s.o.SKU + "/queue/me"
	if wait > 0 {
		path += fmt.Sprintf("?wait=%d", int(wait.Seconds()))
	}
	a := s.call(ctx, http.MethodGet, path, nil, b.auth)
	status, body := a.Status, a.Body
	if status != http.StatusOK || json.Unmarshal(body, &p) != nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if p.Rank > 0 {
		b.rank = p.Rank
	}
	switch {
	case p.SoldOut && !b.won:
		if b.soldOut.IsZero() {
			b.soldOut = time.Now()
		}
		b.done = true
	case p.Pass != "" && !p.Spent:
		b.pass = p.Pass
	}
}

func (s *sim) do(ctx context.Context, method, path string, body []byte, hdr http.Header) (int, string) {
	a := s.call(ctx, method, path, body, hdr)
	return a.Status, a.Code()
}

// call sends one request and counts its answer by jsoncall's key ("201",
// "429 BUSY"), or as "error"; an error, or the run's end, is the zero
// Answer.
func (s *sim) call(ctx context.Context, method, path string, body []byte, hdr http.Header) jsoncall.Answer {
	a, err := jsoncall.Do(ctx, s.client, method, s.o.Base+path, body, hdr)
	key := "error"
	switch {
	case err != nil && ctx.Err() != nil:
		return jsoncall.Answer{} // the run's end, not an answer
	case err == nil:
		key = a.Key()
	}
	s.mu.Lock()
	s.answers[method+" "+key]++
	s.mu.Unlock()
	if err != nil {
		return jsoncall.Answer{}
	}
	return a
}

type watchFigures struct {
	maxOutstanding, maxOver, maxOverCapacity, maxCapacity int64
	samples                                               int
}

// watch samples the passes outstanding against the units left every
// 20 ms. Units left are read first: between the two reads a pass can only
// be spent (fewer outstanding) or issued for a unit still left, so the
// sample never shows an excess that was not there.
func (s *sim) watch(ctx context.Context) watchFigures {
	w := watchFigures{maxOver: math.MinInt64, maxOverCapacity: math.MinInt64}
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return w
		case <-t.C:
		}
		left, out, capacity, err := s.o.Watch(ctx)
		if err != nil {
			continue
		}
		w.samples++
		w.maxOutstanding = max(w.maxOutstanding, out)
		w.maxOver = max(w.maxOver, out-(left+s.o.InFlightCap))
		w.maxOverCapacity = max(w.maxOverCapacity, out-capacity)
		w.maxCapacity = max(w.maxCapacity, capacity)
	}
}

func (s *sim) result(buyers []*buyer, w watchFigures) Result {
	r := Result{Queue: s.o.Queue, LongPollS: s.o.LongPoll.Seconds(), Units: s.o.Units, Answers: s.answers, Reserved: s.reserved.Load(),
		Seconds: time.Since(s.start).Seconds(), LastUnitS: time.Duration(s.lastUnit.Load()).Seconds(),
		Entered: s.entered.Load(), EnteredLate: s.late.Load()}
	for _, n := range s.answers {
		r.Requests += n
	}
	for _, c := range s.o.Classes {
		r.Classes = append(r.Classes, ClassResult{Class: c})
	}
	var ranks, admitted []float64
	sends, lateNs := make([]int64, len(r.Classes)), make([]int64, len(r.Classes))
	var lastTold time.Time
	lastUnit := s.start.Add(time.Duration(s.lastUnit.Load()))
	for _, b := range buyers {
		cr := &r.Classes[b.class]
		cr.Requests += b.requests
		cr.Skipped += b.skipped
		sends[b.class] += b.sends
		lateNs[b.class] += b.lateNs
		cr.LateMaxMs = max(cr.LateMaxMs, float64(b.lateMax.Microseconds())/1000)
		if b.won {
			cr.Wins++
		}
		if !s.o.Queue || b.rank == 0 {
			continue
		}
		ranks = append(ranks, float64(b.rank))
		at := math.Inf(1)
		if b.won {
			at = float64(b.wonAt)
			r.Admitted++
			if b.rank > s.o.Units {
				r.OutOfRank++
			}
		}
		admitted = append(admitted, at)
		if !b.won {
			if b.soldOut.IsZero() {
				r.NotToldSoldOut++
			} else if b.soldOut.After(lastTold) {
				lastTold = b.soldOut
			}
		}
	}
	for i := range r.Classes {
		c := &r.Classes[i]
		c.WinRate = float64(c.Wins) / float64(max(c.Buyers, 1))
		c.Lo, c.Hi = Wilson(c.Wins, c.Buyers, Z95)
		if sends[i] > 0 {
			c.LateMs = float64(lateNs[i]) / float64(sends[i]) / 1e6
		}
	}
	for i := range r.Classes {
		c, first := &r.Classes[i], r.Classes[0]
		c.DiffLo, c.DiffHi = DiffCI(c.Wins, c.Buyers, first.Wins, first.Buyers, Z95)
	}
	if s.o.Queue {
		r.Ranked = len(ranks)
		// JSON has no NaN: an undefined tau (fewer than two ranked
		// buyers, or none admitted) is reported as 0.
		r.KendallTau, r.KendallTauB, r.MaxTauB = admissionTau(ranks, admitted)
		r.KendallTau, r.KendallTauB, r.MaxTauB = finite(r.KendallTau), finite(r.KendallTauB), finite(r.MaxTauB)
		moments := map[int64]bool{}
		for _, a := range admitted {
			if !math.IsInf(a, 1) {
				moments[time.Duration(a).Milliseconds()] = true
			}
		}
		r.AdmissionMoments = len(moments)
		r.MaxOutstanding, r.MaxOverCap, r.Samples, r.InFlightCap = w.maxOutstanding, w.maxOver, w.samples, s.o.InFlightCap
		r.MaxOverCapacity, r.MaxCapacity = w.maxOverCapacity, w.maxCapacity
		if !lastTold.IsZero() {
			r.SoldOutLagMs = float64(lastTold.Sub(lastUnit).Microseconds()) / 1000
		}
	}
	return r
}

// admissionTau is Kendall's tau between rank and admission over the pairs
// the admission order tells apart, tau-b over all pairs, and tau-b's
// largest value under the admission's ties (NaN without ranks). Buyers
// never admitted come after every admitted one (+Inf). Ranks are untied
// (one per buyer), so tau-b = (C - D) / sqrt(n0 (n0 - n2)) and its bound
// is sqrt((n0 - n2) / n0); their ratio, (C - D) / (C + D), is the tau of
// the pairs untied in admission.
func admissionTau(ranks, admitted []float64) (tau, tauB, maxB float64) {
	tauB = KendallTauB(ranks, admitted)
	n := len(ranks)
	if n < 2 || math.IsNaN(tauB) {
		return math.NaN(), tauB, math.NaN()
	}
	n0 := float64(n) * float64(n-1) / 2
	counts := map[float64]int{}
	for _, a := range admitted {
		counts[a]++
	}
	var n2 float64
	for _, c := range counts {
		n2 += float64(c) * float64(c-1) / 2
	}
	maxB = math.Sqrt((n0 - n2) / n0)
	return tauB / maxB, tauB, maxB
}

func finite(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return v
}
