// Package docs holds no code: its test checks that every YAML sample of
// README.md and of the Markdown files in this folder works as pasted, and
// that example.yml at the top of the repository is a valid configuration.
package docs
