// Package mixin holds the tests of the jsonnet monitoring mixin in this
// folder: how it takes its _config, and that the commands its README
// documents work as written. The mixin itself is jsonnet, not Go.
package mixin
