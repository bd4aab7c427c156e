package fleet

import (
	"bytes"
	"testing"
)

// FuzzDecode feeds hostile bytes to Decode: it never panics, and what it
// accepts encodes within MaxEncodedVerdict and reads back the same, so
// that a verdict relayed is the verdict read.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"s":"unhealthy","v":true,"r":false,"c":"failed","e":"timeout","t":1735689600000}`))
	f.Add([]byte(`{"s":"probe_unsupported","v":false,"r":true,"c":"refused","t":1}`))
	f.Add([]byte(`{"s":"healthy","v":true,"r":true,"t":0,"s":"unknown"}`))
	f.Add([]byte(`{"S":"healthy","V":true,"R":true,"T":9223372036854775807}`))
	f.Add([]byte(`{"s":"unknown","v":false,"r":true,"t":0,"x":[[[[[]]]]]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := Decode(data)
		if err != nil {
			return
		}
		encoded, err := Encode(v)
		if err != nil {
			t.Fatalf("Decode(%q) = %+v, which Encode refuses: %v", data, v, err)
		}
		if len(encoded) > MaxEncodedVerdict {
			t.Fatalf("Encode(%+v) is %d bytes, more than Decode reads", v, len(encoded))
		}
		back, err := Decode(encoded)
		if err != nil || back != v {
			t.Fatalf("Decode(Encode(%+v)) = %+v, %v", v, back, err)
		}
		if again, _ := Encode(back); !bytes.Equal(again, encoded) {
			t.Fatalf("%+v encodes as %s, then as %s", v, encoded, again)
		}
	})
}
