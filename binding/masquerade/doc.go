// Package masquerade implements the masquerade binding method: both halves.
package masquerade
