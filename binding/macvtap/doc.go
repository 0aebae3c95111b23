// Package macvtap implements the macvtap binding method: both halves.
package macvtap
