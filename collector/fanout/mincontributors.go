package fanout

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/probegate/probegate/collector/fanout/internal/straggler"
	"github.com/probegate/probegate/collector/pool"
	"github.com/probegate/probegate/internal/proxyheader"
)

// This file reads what a client may demand of one round: more
// contributions than fanout.min_contributors (Probegate-Min-Contributors:
// N), or every configured backend's with no straggler cut (all). A client
// may demand more than the configuration, never less.

// allContributors is the Probegate-Min-Contributors value that demands
// every configured backend's contribution.
const allContributors = "all"

// demand is what a request asks of its round's contributions.
type demand struct {
	// atLeast is the contributions asked for, 0 when the header is absent.
	atLeast int
	// all asks for every configured backend and cuts no straggler.
	all bool
}

// demandOf reads the request's Probegate-Min-Contributors header: absent,
// a whole number from 1 up, or all. Anything else, a second value
// included, is an error naming the header.
func demandOf(h http.Header) (demand, error) {
	values := h.Values(proxyheader.MinContributors)
	switch len(values) {
	case 0:
		return demand{}, nil
	case 1:
	default:
		return demand{}, fmt.Errorf("the %s header is given %d times: give it once", proxyheader.MinContributors, len(values))
	}
	value := strings.TrimSpace(values[0])
	if strings.EqualFold(value, allContributors) {
		return demand{all: true}, nil
	}
	n, err := strconv.Atoi(value)
	if !onlyDigits(value) {
		err = strconv.ErrSyntax
	} else if errors.Is(err, strconv.ErrRange) {
		// More than any pool holds: capped at the configured backends
		// like any other number.
		n, err = math.MaxInt, nil
	}
	if err != nil || n < 1 {
		return demand{}, fmt.Errorf("the %s header is %q: want a whole number from 1 up, or all", proxyheader.MinContributors, truncateForError(value))
	}
	return demand{atLeast: n}, nil
}

// onlyDigits reports whether s is a non-empty run of ASCII digits: no
// sign, no space, nothing strconv would also accept.
func onlyDigits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// truncateForError keeps an error message about a client's value short
// whatever the client sent.
func truncateForError(value string) string {
	const limit = 64
	if len(value) <= limit {
		return value
	}
	return value[:limit] + "…"
}

// quorum is the round's quorum: configured (fanout.min_contributors of
// the configured units), raised to what the request demands, capped at
// the configured units (roundUnits); a demand never lowers it. all
// demands every configured unit, those out of service included, so that
// a round that could not ask one of them fails: a client that says all
// means the whole answer, not the whole of what was in service. The cap
// is the configured count, not the selected one, for the same reason: N
// is what the client needs, whatever happens to be in service.
func (d demand) quorum(configured, units int) int {
	switch {
	case d.all:
		return max(configured, units)
	case d.atLeast > configured:
		return max(configured, min(d.atLeast, units))
	}
	return configured
}

// raised reports whether the request raised the quorum above configured.
func (d demand) raised(configured, units int) bool {
	return d.quorum(configured, units) > configured
}

// roundUnits is what a round's quorum counts, out of the configured
// backends: each replica group is one unit, since one answer of a group
// makes it whole, and without groups each backend is a group of its own.
// It is the one place that says so: X-Backends, min_contributors,
// Probegate-Min-Contributors and the straggler cut all count these.
func roundUnits(groups []pool.SelectedGroup) int {
	return len(groups)
}

// stragglerRule is the rule that cuts this round's stragglers, nil when
// none may be cut: stragglers are off, or the client demanded all.
func (d demand) stragglerRule(s *settings, quorum int) *straggler.Rule {
	cfg := s.fanout.Stragglers
	if !cfg.Enabled || d.all {
		return nil
	}
	return &straggler.Rule{Factor: cfg.Factor, MinWait: time.Duration(cfg.MinWait), Quorum: quorum}
}
