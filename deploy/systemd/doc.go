// Package systemd holds the test of the systemd units in this folder:
// probegate.service, hardened, and probegate.socket for
// --web.systemd-socket. The units themselves are the deliverable.
package systemd
