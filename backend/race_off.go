//go:build !race

package backend

const verifyKeyGroups = false
