package main

import (
	"net"
	"os"

	"github.com/probegate/probegate/cmd/probegate/internal/flagconfig"
)

// replicaFlag registers --replica.name, the name this replica goes by
// among the replicas that share a pool: in the replica views of the shared
// maintenance store and in the Via header of what the fan-out forwards.
func (o *options) replicaFlag(app flagconfig.Adder) {
	app.Flag("replica.name", "Name of this replica among those sharing a pool (Via of forwarded requests, replica views). Default: <hostname>:<port of the first --web.listen-address>.").
		Envar(flagconfig.Envar("replica.name")).PlaceHolder("HOST:PORT").StringVar(&o.ReplicaName)
}

// replicaName is --replica.name, or the host name and the port of the
// first main listen address when it is not given.
func (o *options) replicaName() string {
	if o.ReplicaName != "" {
		return o.ReplicaName
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	port := "9797"
	if len(o.ListenAddresses) > 0 {
		if _, p, err := net.SplitHostPort(o.ListenAddresses[0]); err == nil && p != "" {
			port = p
		}
	}
	return net.JoinHostPort(host, port)
}
