// Package registry maps each binding method of package api to its
// implementation.
package registry
