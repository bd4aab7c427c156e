// Package agent lends this replica's verdict of each backend to HAProxy
// through HAProxy's agent protocol (agent-check): a client sends one line
// naming a backend, and the server answers one line saying whether HAProxy
// should send it traffic, then closes the connection.
//
// The verdict is what the backend is served as here, read from the pool's
// copy of the one backend (pool.Pool.SnapshotOf), and ReplyFor, which
// reads nothing else, turns it into the agent's words. Every byte a client
// sends is taken as hostile: a line is at most MaxLineBytes long, must
// arrive within ReadTimeout, and must name a backend as the configuration
// may name one; anything else is closed without a reply, which HAProxy
// counts as a failed agent check and acts on in no way.
package agent
