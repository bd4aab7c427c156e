package maintenance

// The bounds of what a replica view says of its listeners. A replica has
// three listeners; a host has a few addresses and names, but one with
// many interfaces must not push a view past the store's 16 KiB, where it
// would be ignored and the replica vanish for its peers: at these bounds
// a view stays under 8 KiB (TestMaximalViewFitsTheStore).
const (
	maxListenerAddresses = 16
	maxHostAddresses     = 64
	maxHostNames         = 8
	// maxHostNameBytes is the longest DNS name.
	maxHostNameBytes = 253
	// maxAddressBytes is longer than any IP address with its port and
	// zone written out.
	maxAddressBytes = 64
)

// bounded is l within the bounds above: the first entries of each list
// that fit, each entry too long left out. A replica publishes its own
// listeners bounded, and reads its peers' bounded, since a view is read,
// not trusted.
func (l *ReplicaListeners) bounded() *ReplicaListeners {
	if l == nil {
		return nil
	}
	return &ReplicaListeners{
		Addresses:     boundedList(l.Addresses, maxListenerAddresses, maxAddressBytes),
		HostAddresses: boundedList(l.HostAddresses, maxHostAddresses, maxAddressBytes),
		HostNames:     boundedList(l.HostNames, maxHostNames, maxHostNameBytes),
	}
}

// boundedList is the first at most n entries of list no longer than
// size bytes each.
func boundedList(list []string, n, size int) []string {
	var out []string
	for _, s := range list {
		if len(out) == n {
			break
		}
		if len(s) <= size {
			out = append(out, s)
		}
	}
	return out
}
