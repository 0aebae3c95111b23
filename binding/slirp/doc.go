// Package slirp implements the slirp binding method: both halves.
package slirp
