// Package deploy holds the tests of what ships probegate: the Dockerfile
// at the root of the repository and the release builds. The Kubernetes
// manifests and systemd units have their own folders and tests.
package deploy
