// Package bridge implements the bridge binding method: both halves.
package bridge
