// Package passt implements the passt binding method: both halves.
package passt
