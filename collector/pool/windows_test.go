package pool

import (
	"reflect"
	"testing"

	"github.com/go-kit/log"

	"github.com/probegate/probegate/config"
	"github.com/probegate/probegate/internal/testclock"
)

// holdsOutlierWindow reports whether b holds a window of rounds for
// outlier detection. The window is unexported; reflection reads it so that
// the memory a pool without outlier detection spends can be pinned without
// an accessor made for tests.
func holdsOutlierWindow(b *Backend) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return !reflect.ValueOf(&b.outlier).Elem().FieldByName("stats").IsNil()
}

// TestOutlierWindowOnlyWhileDetecting: the window of rounds, most of what a
// backend keeps for outlier detection, exists only while outlier
// detection is on: rounds on a pool without it allocate none, rounds with
// it fill one, and a reload turning it off frees it.
func TestOutlierWindowOnlyWhileDetecting(t *testing.T) {
	clock := testclock.New(epoch)
	p := New(log.NewNopLogger(), clock.Now)
	targets := numberedTargets(3)
	if err := p.Apply(targets, Settings{}); err != nil {
		t.Fatal(err)
	}
	rounds(p, clock, 3, nil, nil)
	for _, b := range p.Backends() {
		if holdsOutlierWindow(b) {
			t.Fatalf("%s holds an outlier window with outlier detection off", b.Name)
		}
	}

	od := config.DefaultOutlierDetection()
	od.Enabled = true
	if err := p.Apply(targets, Settings{Outlier: od}); err != nil {
		t.Fatal(err)
	}
	rounds(p, clock, 1, nil, nil)
	for _, b := range p.Backends() {
		if !holdsOutlierWindow(b) {
			t.Fatalf("%s holds no outlier window with outlier detection on", b.Name)
		}
	}

	if err := p.Apply(targets, Settings{}); err != nil {
		t.Fatal(err)
	}
	for _, b := range p.Backends() {
		if holdsOutlierWindow(b) {
			t.Errorf("%s still holds its outlier window after a reload turned outlier detection off", b.Name)
		}
	}
}
