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
	"github.com/probegate/probegate/internal/proxyheader"
)

// This file reads what a client may demand of one round: more
// contributions than fanout.min_contributors (Probegate-Min-Contributors:
// N), or every selected backend's with no straggler cut (all). A client
// may demand more than the configuration, never less.

// allContributors is the Probegate-Min-Contributors value that demands
// every selected backend's contribution.
const allContributors = "all"

// demand is what a request asks of its round's contributions.
type demand struct {
	// atLeast is the contributions asked for, 0 when the header is absent.
	atLeast int
	// all asks for every selected backend and cuts no straggler.
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
		// More than any pool holds: capped at the backends selected
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
// the configured backends), raised to what the request demands, capped at
// the backends selected; a demand never lowers it.
func (d demand) quorum(configured, selected int) int {
	switch {
	case d.all:
		return max(configured, selected)
	case d.atLeast > configured:
		return max(configured, min(d.atLeast, selected))
	}
	return configured
}

// raised reports whether the request raised the quorum above configured.
func (d demand) raised(configured, selected int) bool {
	return d.quorum(configured, selected) > configured
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
