// Package kubernetes holds the test of the kustomize base in this folder:
// it renders the base with kubectl kustomize, decodes every object
// strictly into the Kubernetes and prometheus-operator API types, and
// checks the invariants that keep probegate's drain and probes working.
package kubernetes
