package pool

import (
	"reflect"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/go-kit/log"

	"github.com/probegate/probegate/collector/outlier"
	"github.com/probegate/probegate/collector/traffic"
	"github.com/probegate/probegate/config"
	"github.com/probegate/probegate/internal/testclock"
)

// holdsWindow reports whether the state at b's field named feature holds
// a window, the pointer named window in it. The windows are unexported;
// reflection reads them so that the memory a feature that is off spends
// can be pinned without accessors made for tests.
func holdsWindow(b *Backend, feature, window string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return !reflect.ValueOf(b).Elem().FieldByName(feature).FieldByName(window).IsNil()
}

// passiveNeverEjecting is passive health on, but with too few requests
// to eject.
var passiveNeverEjecting = config.PassiveHealth{Enabled: true, Window: model.Duration(time.Minute),
	MaxFailures: 1000, MinRequests: 1000, MaxEjectedPercent: 100}

// TestWindowsOnlyWhileTheirFeatureIsOn: the windows of outlier detection
// (its rounds, most of what a backend keeps for it) and passive health
// (its fan-out outcomes) exist only while their feature is on: rounds on
// a pool without the feature allocate none, rounds with it fill one, and
// a reload turning it off frees it.
func TestWindowsOnlyWhileTheirFeatureIsOn(t *testing.T) {
	detecting := config.DefaultOutlierDetection()
	detecting.Enabled = true
	for _, tc := range []struct {
		name, feature, window string
		on                    Settings
	}{
		{"outlier detection", "outlier", "stats", Settings{Fanout: true, Outlier: detecting}},
		{"passive health", "passive", "window", Settings{Fanout: true, Passive: passiveNeverEjecting}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := testclock.New(epoch)
			p := New(log.NewNopLogger(), clock.Now)
			targets := numberedTargets(3)
			off := Settings{Fanout: true}
			holds := func(want bool, when string) {
				t.Helper()
				for _, b := range p.Backends() {
					if got := holdsWindow(b, tc.feature, tc.window); got != want {
						t.Fatalf("%s: %s holds the window of %s: %v, want %v", when, b.Name, tc.name, got, want)
					}
				}
			}
			if err := p.Apply(targets, off); err != nil {
				t.Fatal(err)
			}
			rounds(p, clock, 3, map[int]bool{1: true}, nil)
			holds(false, "off")
			if err := p.Apply(targets, tc.on); err != nil {
				t.Fatal(err)
			}
			rounds(p, clock, 1, nil, nil)
			holds(true, "on")
			if err := p.Apply(targets, off); err != nil {
				t.Fatal(err)
			}
			holds(false, "after a reload turned it off")
		})
	}
}

// TestInheritedWindowsAreCopies: a backend rebuilt for new client
// settings inherits copies of the windows, so that a round still in
// flight on the backend it replaced, written under that backend's mutex,
// does not write the new one's.
func TestInheritedWindowsAreCopies(t *testing.T) {
	clock := testclock.New(epoch)
	p := New(log.NewNopLogger(), clock.Now)
	targets := numberedTargets(3)
	od := config.DefaultOutlierDetection()
	od.Enabled = true
	s := Settings{Fanout: true, Outlier: od, Passive: passiveNeverEjecting}
	if err := p.Apply(targets, s); err != nil {
		t.Fatal(err)
	}
	rounds(p, clock, 1, nil, nil)
	replaced := p.Backends()[0]
	targets[0].ClientConfig.FollowRedirects = !targets[0].ClientConfig.FollowRedirects
	if err := p.Apply(targets, s); err != nil {
		t.Fatal(err)
	}
	inheritor := p.Backends()[0]
	if inheritor == replaced {
		t.Fatal("the backend was not rebuilt for its new client settings")
	}

	replaced.recordRound(clock.Now(), time.Duration(od.Window), true, time.Millisecond)
	replaced.mu.Lock()
	replaced.passive.Record(clock.Now(), traffic.Outcome{Erred: true, Failed: true, Reason: traffic.HTTP5xx}, s.Passive)
	replaced.mu.Unlock()

	inheritor.mu.Lock()
	defer inheritor.mu.Unlock()
	if sum, _ := inheritor.outlier.Summary(clock.Now(), outlier.SettingsOf(od)); sum.Rounds != 1 {
		t.Errorf("the inheritor's outlier window holds %d rounds, want the 1 it inherited", sum.Rounds)
	}
	if counts := inheritor.passive.Counts(clock.Now(), time.Minute); counts.Requests() != 1 {
		t.Errorf("the inheritor's passive health window holds %d outcomes, want the 1 it inherited", counts.Requests())
	}
}
