package fleet

import (
	"fmt"
	"strings"
	"testing"
)

// op is an operation of the tables, of size bytes in all.
func op(key string, size int) Op {
	return Op{Key: key, Value: make([]byte, size-len(key)-OpOverhead)}
}

func TestSplit(t *testing.T) {
	for _, c := range []struct {
		name   string
		sizes  []int
		limits Limits
		want   []int // the number of operations of each write
	}{
		// The sizes and MaxBytes are in tens of bytes, to leave room for
		// a key and the overhead.
		{"nothing to write", nil, Limits{MaxBytes: 100}, nil},
		{"one write", []int{30, 30, 40}, Limits{MaxBytes: 100}, []int{3}},
		{"exactly full, then the next", []int{50, 50, 5}, Limits{MaxBytes: 100}, []int{2, 1}},
		{"one byte over", []int{50, 51}, Limits{MaxBytes: 100}, []int{1, 1}},
		{"an operation alone at the limit", []int{100, 100, 100}, Limits{MaxBytes: 100}, []int{1, 1, 1}},
		{"in order, never reordered to fill", []int{60, 60, 40, 40}, Limits{MaxBytes: 100}, []int{1, 2, 1}},
		{"by count", []int{30, 30, 30, 30, 30}, Limits{MaxBytes: 1000, MaxOps: 2}, []int{2, 2, 1}},
		{"by count and size", []int{30, 30, 90, 30, 30, 30}, Limits{MaxBytes: 100, MaxOps: 2}, []int{2, 1, 2, 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ops := make([]Op, len(c.sizes))
			for i, size := range c.sizes {
				ops[i] = op(fmt.Sprintf("k%d", i), 10*size)
			}
			limits := Limits{MaxBytes: 10 * c.limits.MaxBytes, MaxOps: c.limits.MaxOps}
			writes, err := Split(ops, limits)
			if err != nil {
				t.Fatal(err)
			}
			var got []int
			next := 0
			for _, w := range writes {
				got = append(got, len(w))
				size := 0
				for _, o := range w {
					if o.Key != ops[next].Key {
						t.Fatalf("write %v does not continue from operation %d", w, next)
					}
					next++
					size += o.Size()
				}
				if size > limits.MaxBytes {
					t.Errorf("a write of %d bytes; the limit is %d", size, limits.MaxBytes)
				}
			}
			if next != len(ops) || fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Errorf("writes of %v operations, %d of %d written; want %v", got, next, len(ops), c.want)
			}
		})
	}
}

func TestSplitRefusesAnOperationTooLarge(t *testing.T) {
	ops := []Op{op("small", 50), op("/probegate/verdicts/r1/huge", 101)}
	writes, err := Split(ops, Limits{MaxBytes: 100})
	if err == nil || !strings.Contains(err.Error(), `key "/probegate/verdicts/r1/huge" takes 101 bytes, more than the 100`) || writes != nil {
		t.Fatalf("Split = %v, %v; want an error naming the key", writes, err)
	}
}

func TestOpSize(t *testing.T) {
	value, err := Encode(Verdict{State: unhealthy, Verified: true, Probed: true, Class: 2, Reason: 3, Since: at(0)})
	if err != nil {
		t.Fatal(err)
	}
	put := Op{Key: "/p/verdicts/r1/s1-a", Value: value}
	if want := len("/p/verdicts/r1/s1-a") + len(value) + OpOverhead; put.Size() != want {
		t.Errorf("Size = %d; want %d", put.Size(), want)
	}
	if del := (Op{Key: "/p/verdicts/r1/s1-a", Delete: true}); del.Size() != len(del.Key)+OpOverhead {
		t.Errorf("a delete's Size = %d; want its key and the overhead", del.Size())
	}
}
