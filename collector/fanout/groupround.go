package fanout

import (
	"context"
	"math/rand/v2"
	"net/http"
	"slices"
	"time"

	"github.com/go-kit/log/level"

	"github.com/probegate/probegate/collector/fanout/internal/hedge"
	"github.com/probegate/probegate/collector/fanout/internal/membudget"
	"github.com/probegate/probegate/collector/fanout/internal/replica"
	"github.com/probegate/probegate/collector/fanout/internal/straggler"
	"github.com/probegate/probegate/collector/pool"
	"github.com/probegate/probegate/collector/traffic"
)

// This file is a round's asking and waiting. A round asks one replica of
// every replica group (package replica chooses which), and one answer
// makes a group whole. The round's one waiting goroutine collects the
// answers as they come and decides everything else: a replica that fails
// before its answer starts is replaced by a sibling (failover); a replica
// late past the group's hedge delay gets a sibling asked beside it
// (hedge), the first whole answer winning and the other request
// cancelled; and with fanout.stragglers on, the groups its peers outrun
// are cut (stragglers.go counts them). A pool without groups is a group
// per backend: each is asked, and has no sibling to fail over or hedge to.

// attempt is one request of a round to one replica.
type attempt struct {
	// group is the index of its group in the round, replica that of the
	// replica among the group's selected ones.
	group, replica int
	// answer is the replica's, written by the request's goroutine before
	// it reports on the round's done channel.
	answer backendAnswer
	cancel context.CancelFunc
	began  time.Time
	// cutAt is when the round cancelled the request: its group was
	// answered by a sibling (lost), or cut as a straggler. Zero while it
	// was not cancelled.
	cutAt time.Time
	// hedge marks the request that hedged its group; lost marks one
	// whose sibling answered first; finished one whose answer is in.
	hedge, lost, finished bool
}

// roundGroup is one replica group's part in a round.
type roundGroup struct {
	name string
	// replicas are the replicas the round may ask, skipped those it may
	// not, each in configuration order.
	replicas, skipped []*pool.Backend
	// state and states are the fan-out's lasting state of the group and
	// of each of its replicas; nil for a group of one backend.
	state  *groupState
	states []*replicaState
	tries  replica.Tries
	// running counts the group's requests in flight.
	running int
	// winner is the attempt that contributed, last the attempt whose
	// failure is the group's word when none did; -1 for none.
	winner, last int
	// settled is set once the round waits for the group no more:
	// answered, failed for good, or cut.
	settled, cut bool
	// timer is the hedge's, and armed its generation: a timer that fires
	// for an older one (reset by a failover) is stale.
	timer *time.Timer
	armed int
	// one is the choice of a group of one backend, kept here so that
	// choosing it allocates nothing.
	one [1]replica.Replica
}

// asked reports whether the round asked any of the group's replicas.
func (g *roundGroup) asked() bool { return len(g.replicas) > 0 }

// hedgeDue says that a group's hedge timer fired.
type hedgeDue struct{ group, armed int }

// round is one round's asking and waiting, owned by the goroutine that
// serves its request.
type round struct {
	f                       *Fanout
	client                  *http.Request
	target                  string
	header, unauthenticated http.Header
	body                    []byte
	s                       *settings
	mem                     *membudget.Round
	ctx                     context.Context
	start                   time.Time

	groups []roundGroup
	// attempts holds room for every request the round may send, so that
	// the requests' goroutines write their answers in place; n are sent.
	attempts []attempt
	n        int
	done     chan int
	hedges   chan hedgeDue
	// hedging is the hedge delay while hedging is on.
	hedging *hedge.Delay
	// cuts says whether the round may cut stragglers.
	cuts bool
}

// newRoundGroups makes the round's groups from the pool's selection,
// fetching the lasting state of every group of more than one backend.
func (f *Fanout) newRoundGroups(selection []pool.SelectedGroup) []roundGroup {
	states := f.replicas.Load()
	// The selection holds every backend of the pool, once.
	poolSize := 0
	for _, sg := range selection {
		poolSize += len(sg.Selected) + len(sg.Skipped)
	}
	groups := make([]roundGroup, len(selection))
	for i, sg := range selection {
		g := &groups[i]
		g.name, g.replicas, g.skipped, g.winner, g.last = sg.Name, sg.Selected, sg.Skipped, -1, -1
		if len(sg.Selected)+len(sg.Skipped) < 2 || len(sg.Selected) == 0 {
			continue
		}
		names := make([]string, len(sg.Selected))
		for j, b := range sg.Selected {
			names[j] = b.Name
		}
		g.state, g.states = states.group(sg.Name, names, poolSize)
	}
	return groups
}

// maxAttempts is how many requests a round of groups may send: each group
// at most a choice, a failover and a hedge, never one replica twice.
func maxAttempts(groups []roundGroup) int {
	n := 0
	for _, g := range groups {
		n += min(len(g.replicas), 3)
	}
	return n
}

// ask runs the round: it asks one replica of every group that has one in
// service and waits for the groups, bounded by fanout.timeout and the
// client's context, failing over and hedging as the settings say. With a
// straggler rule it stops waiting once the rule says so: the groups still
// running are cancelled and cut. Every request is waited for before it
// returns (its buffers belong to the round), and the round's requests are
// fed to passive health and outlier detection (charge).
func (f *Fanout) ask(r *http.Request, groups []roundGroup, target string, header http.Header, body []byte, s *settings, mem *membudget.Round, rule *straggler.Rule) *round {
	var ctx context.Context
	var cancel context.CancelFunc
	if timeout := time.Duration(s.fanout.Timeout); timeout > 0 {
		ctx, cancel = context.WithTimeout(r.Context(), timeout)
	} else {
		ctx, cancel = context.WithCancel(r.Context())
	}
	defer cancel()
	capacity := maxAttempts(groups)
	rd := &round{f: f, client: r, target: target, header: header, unauthenticated: withoutAuthorization(header),
		body: body, s: s, mem: mem, ctx: ctx, start: f.now(), groups: groups,
		attempts: make([]attempt, capacity), done: make(chan int, capacity), cuts: rule != nil}
	if s.fanout.Hedge.Enabled {
		rd.hedging = &hedge.Delay{Auto: s.fanout.Hedge.After.Auto, After: time.Duration(s.fanout.Hedge.After.Duration),
			MinAfter: time.Duration(s.fanout.Hedge.MinAfter), Timeout: time.Duration(s.fanout.Timeout)}
		// A group's timer is armed at its choice and at its failover.
		rd.hedges = make(chan hedgeDue, 2*len(groups))
	}
	defer rd.stopTimers()
	asked := 0
	for i := range groups {
		if groups[i].asked() {
			asked++
			rd.choose(i)
		}
	}
	var cut *straggler.Round
	if rule != nil {
		cut = straggler.NewRound(*rule, asked)
	}
	rd.wait(asked, cut)
	f.charge(rd)
	return rd
}

// choose asks the replica of group i the round chooses.
func (rd *round) choose(i int) {
	g := &rd.groups[i]
	j, _ := g.tries.Choose(rd.choices(g), rd.f.rng)
	rd.send(i, j, false)
	rd.armHedge(i)
}

// choices are the group's replicas as replica.Choose reads them: a group
// of one backend keeps no state, and its one replica is the choice.
func (rd *round) choices(g *roundGroup) []replica.Replica {
	if g.states == nil {
		return g.one[:len(g.replicas)]
	}
	out := make([]replica.Replica, len(g.replicas))
	for i, s := range g.states {
		out[i] = s.choice()
	}
	return out
}

// send asks replica j of group i in a goroutine of its own, which reports
// on done.
func (rd *round) send(i, j int, isHedge bool) {
	g := &rd.groups[i]
	k := rd.n
	rd.n++
	a := &rd.attempts[k]
	a.group, a.replica, a.hedge, a.began = i, j, isHedge, rd.f.now()
	// A request is cancelled on its own when a sibling answers first or
	// it is cut as a straggler; a group of one in a round that cuts
	// nobody shares the round's context.
	var ctx context.Context
	ctx, a.cancel = rd.ctx, func() {}
	if len(g.replicas) > 1 || rd.cuts {
		ctx, a.cancel = context.WithCancel(rd.ctx)
	}
	g.running++
	if g.states != nil {
		g.states[j].inFlight.Add(1)
	}
	if rd.hedging != nil {
		rd.s.hedges.Request()
	}
	b := g.replicas[j]
	h := rd.header
	if b.Authenticates() {
		h = rd.unauthenticated
	}
	go func() {
		defer func() { rd.done <- k }()
		// A panic handling one backend's answer must cost that answer,
		// not the process: this goroutine is outside net/http's recover.
		defer func() {
			if p := recover(); p != nil {
				level.Error(rd.f.logger).Log("msg", "Fan-out request panicked", "backend", b.Name, "url", b.URL, "panic", p)
				a.answer = backendAnswer{backend: b, outcome: traffic.Outcome{Erred: true, Reason: traffic.Local}}
			}
		}()
		a.answer = rd.f.askOne(ctx, rd.client, b, rd.target, h, rd.body, rd.s, rd.mem)
		a.answer.latency = rd.f.now().Sub(a.began)
	}()
}

// armHedge starts group i's hedge timer from now, when hedging is on and
// the group has a sibling that could be asked.
func (rd *round) armHedge(i int) {
	g := &rd.groups[i]
	if rd.hedging == nil || len(g.replicas) < 2 {
		return
	}
	after, ok := g.state.delayFor(*rd.hedging)
	if !ok {
		return
	}
	if g.timer != nil {
		g.timer.Stop()
	}
	g.armed++
	due := hedgeDue{group: i, armed: g.armed}
	g.timer = time.AfterFunc(after, func() { rd.hedges <- due })
}

// stopTimers stops the hedge timers. One that fired meanwhile sends into
// the channel's room and is never read.
func (rd *round) stopTimers() {
	for i := range rd.groups {
		if t := rd.groups[i].timer; t != nil {
			t.Stop()
		}
	}
}

// wait collects the answers until no group of the asked ones is left to
// wait for, or the straggler rule (cut, nil without one) says the round
// may answer without the rest; then it cuts those and waits for every
// request still running.
func (rd *round) wait(pending int, cut *straggler.Round) {
	var timer *time.Timer
	var expired <-chan time.Time
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for pending > 0 {
		select {
		case k := <-rd.done:
			g := &rd.groups[rd.attempts[k].group]
			wasSettled := g.settled
			rd.finish(k)
			if wasSettled || !g.settled {
				continue
			}
			pending--
			if cut == nil || g.winner < 0 {
				continue
			}
			cut.Contributed(rd.f.now().Sub(rd.start))
			after, ok := cut.CutAfter()
			if !ok {
				continue
			}
			wait := rd.start.Add(after).Sub(rd.f.now())
			if timer == nil {
				timer = time.NewTimer(wait)
				expired = timer.C
			} else {
				timer.Reset(wait)
			}
		case due := <-rd.hedges:
			rd.hedge(due)
		case <-expired:
			rd.cutStragglers()
			pending = 0
		}
	}
	rd.drain()
}

// finish takes in the answer of attempt k: it settles the attempt's group
// when the answer contributed, or when it failed and nothing else of the
// group is running or can be asked (failover).
func (rd *round) finish(k int) {
	a := &rd.attempts[k]
	g := &rd.groups[a.group]
	a.finished = true
	g.running--
	rd.remember(a, g)
	switch {
	case a.answer.contributed && !g.settled:
		rd.win(a.group, k)
	case !a.cutAt.IsZero():
		rd.asCut(a, g)
	case g.settled:
	default:
		g.last = k
		if g.running == 0 && !rd.failover(a.group, k) {
			g.settled = true
			rd.stopHedge(g)
		}
	}
}

// remember feeds the group's lasting state with a finished request: a
// whole answer's latency, or the time a cancelled request was given,
// which is a lower bound of what it would have taken. A failure feeds
// neither.
func (rd *round) remember(a *attempt, g *roundGroup) {
	if g.states == nil {
		return
	}
	s := g.states[a.replica]
	s.inFlight.Add(-1)
	took := a.answer.latency
	switch {
	case a.answer.contributed:
	case !a.cutAt.IsZero():
		took = a.cutAt.Sub(a.began)
	default:
		return
	}
	s.observe(rd.f.now(), took)
	g.state.record(took)
}

// win settles group i with attempt k's contribution and cancels its other
// requests, which lost.
func (rd *round) win(i, k int) {
	g := &rd.groups[i]
	g.settled, g.winner = true, k
	rd.stopHedge(g)
	if g.running == 0 {
		// Nothing else of the group is running: always so for a group
		// of one backend.
		return
	}
	now := rd.f.now()
	for j := range rd.n {
		if a := &rd.attempts[j]; a.group == i && j != k && !a.finished {
			a.lost, a.cutAt = true, now
			a.cancel()
		}
	}
}

// asCut turns the answer of a request the round cancelled into what it
// was: no failure of the backend, but a request given the time until its
// cut, which outlier detection judges as a success that took that long.
// A whole answer that came as its sibling's won is no contribution
// either, and no failure.
func (rd *round) asCut(a *attempt, g *roundGroup) {
	b := g.replicas[a.replica]
	if a.answer.contributed {
		a.answer.contributed, a.answer.body = false, nil
		return
	}
	a.answer = backendAnswer{backend: b, outcome: traffic.Outcome{Erred: true, Reason: traffic.Straggler}, latency: a.cutAt.Sub(a.began)}
	if !a.lost {
		rd.f.metrics.countStraggler(b.Name)
	}
}

// failover replaces the failed attempt k of group i by a sibling, when
// failover is on, the failure came before an answer began (a transport
// error, a 5xx or a 429), the round is still running and the group has a
// sibling it did not ask; it reports whether it did.
func (rd *round) failover(i, k int) bool {
	g := &rd.groups[i]
	if !rd.s.fanout.Failover || !failsOver(rd.attempts[k].answer.outcome) || rd.ctx.Err() != nil {
		return false
	}
	j, ok := g.tries.Failover(rd.choices(g), rd.attempts[k].replica, rd.f.rng)
	if !ok {
		return false
	}
	rd.send(i, j, false)
	rd.f.metrics.countFailover(g.name)
	rd.armHedge(i)
	return true
}

// failsOver reports whether a request that came to o is replaced by a
// sibling: it failed before its answer began.
func failsOver(o traffic.Outcome) bool {
	switch o.Reason {
	case traffic.Transport, traffic.HTTP5xx, traffic.HTTP429:
		return o.Erred
	}
	return false
}

// hedge asks a sibling of a group whose replica has not answered by its
// hedge delay, if the group has one and the token bucket pays for it.
func (rd *round) hedge(due hedgeDue) {
	g := &rd.groups[due.group]
	if g.settled || due.armed != g.armed || g.running == 0 || rd.ctx.Err() != nil {
		return
	}
	j, outcome := g.tries.Hedge(rd.choices(g), rd.f.rng, rd.s.hedges)
	switch outcome {
	case replica.Hedged:
		rd.send(due.group, j, true)
	case replica.HedgeRefused:
		rd.f.metrics.countHedgeRefused()
	}
}

// stopHedge stops the group's hedge timer: the group is settled.
func (rd *round) stopHedge(g *roundGroup) {
	if g.timer != nil {
		g.timer.Stop()
	}
}

// cutStragglers cancels the requests of every group still running: they
// are cut as stragglers unless a whole answer was already on its way
// (drain keeps it).
func (rd *round) cutStragglers() {
	now := rd.f.now()
	for k := range rd.n {
		a := &rd.attempts[k]
		if g := &rd.groups[a.group]; !a.finished && !g.settled {
			a.cutAt = now
			a.cancel()
		}
	}
	for i := range rd.groups {
		if g := &rd.groups[i]; g.asked() && !g.settled {
			g.cut = true
		}
	}
}

// drain waits for every request still running: those the round
// cancelled return promptly, and their buffers belong to the round. A
// contribution of a group cut meanwhile, whole before its request was
// cancelled, is kept.
func (rd *round) drain() {
	running := 0
	for k := range rd.n {
		if !rd.attempts[k].finished {
			running++
		}
	}
	for range running {
		k := <-rd.done
		a := &rd.attempts[k]
		g := &rd.groups[a.group]
		if a.answer.contributed && g.cut && !g.settled {
			g.cut = false
			a.cutAt = time.Time{}
		}
		rd.finish(k)
	}
	for k := range rd.n {
		rd.attempts[k].cancel()
	}
	for i := range rd.groups {
		if g := &rd.groups[i]; g.cut {
			g.settled = true
		}
	}
	for k := range rd.n {
		if a := &rd.attempts[k]; a.hedge {
			g := &rd.groups[a.group]
			rd.f.metrics.countHedge(g.name, g.winner == k)
		}
	}
}

// ordered yields the round's requests by group, in the order sent within
// each. They were sent in that order unless a group failed over or
// hedged; only then are they sorted, into a slice of their own, so that a
// round of a pool without groups, read so three times, allocates nothing
// for it.
func (rd *round) ordered(yield func(*attempt) bool) {
	sent := rd.attempts[:rd.n]
	if slices.IsSortedFunc(sent, func(a, b attempt) int { return a.group - b.group }) {
		for k := range sent {
			if !yield(&sent[k]) {
				return
			}
		}
		return
	}
	sorted := make([]*attempt, len(sent))
	for k := range sent {
		sorted[k] = &sent[k]
	}
	slices.SortStableFunc(sorted, func(a, b *attempt) int { return a.group - b.group })
	for _, a := range sorted {
		if !yield(a) {
			return
		}
	}
}

// newRand is the fan-out's source of randomness for choosing replicas:
// safe for concurrent use, since it draws from the runtime's generator,
// which every goroutine may use.
func newRand() *rand.Rand { return rand.New(runtimeSource{}) }

// runtimeSource is math/rand/v2's top-level generator as a Source.
type runtimeSource struct{}

func (runtimeSource) Uint64() uint64 { return rand.Uint64() }
