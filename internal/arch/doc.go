// Package arch holds the architecture test: the import rules of
// docs/ARCHITECTURE.md, checked on every `make test`. It has no code.
package arch
