package fleet

import "fmt"

// The bounds of one publication write.
const (
	// MaxWriteBytes bounds one write's size, well within etcd's request
	// limit (1.5 MiB by default).
	MaxWriteBytes = 512 << 10
	// MaxWriteOps bounds one write's operations: etcd refuses a
	// transaction of more than --max-txn-ops operations, 128 by default.
	MaxWriteOps = 128
	// OpOverhead bounds what an operation adds in a write beyond its key
	// and value: etcd's protobuf framing of a put in a transaction (the
	// operation's tag and length, the key's and the value's, and the
	// lease's tag and varint) takes at most 21 bytes for the keys and
	// values a replica writes.
	OpOverhead = 24
)

// Op is one operation of a publication write: the verdict of one backend
// put under the replica's view lease, or deleted when the replica stops
// being one of its vantage points.
type Op struct {
	Key string
	// Value is the encoded verdict (Encode); none for a delete.
	Value  []byte
	Delete bool
}

// Size is what the operation adds to a write's size: its key, its value
// and OpOverhead.
func (o Op) Size() int { return len(o.Key) + len(o.Value) + OpOverhead }

// Limits bounds one write.
type Limits struct {
	// MaxBytes bounds the sum of the operations' Size.
	MaxBytes int
	// MaxOps bounds the number of operations; 0 for no bound.
	MaxOps int
}

// WriteLimits are the bounds of every publication write.
func WriteLimits() Limits { return Limits{MaxBytes: MaxWriteBytes, MaxOps: MaxWriteOps} }

// Split cuts ops into writes within limits, in order, each as full as it
// may be: the writes are sub-slices of ops. An operation too large for a
// write by itself is an error naming its key: nothing is split then.
func Split(ops []Op, limits Limits) ([][]Op, error) {
	var writes [][]Op
	start, size := 0, 0
	for i, op := range ops {
		n := op.Size()
		if n > limits.MaxBytes {
			return nil, fmt.Errorf("publication: the operation on key %q takes %d bytes, more than the %d a write may", op.Key, n, limits.MaxBytes)
		}
		if size+n > limits.MaxBytes || (limits.MaxOps > 0 && i-start == limits.MaxOps) {
			writes = append(writes, ops[start:i])
			start, size = i, 0
		}
		size += n
	}
	if start < len(ops) {
		writes = append(writes, ops[start:])
	}
	return writes, nil
}
