// Package sriov implements the sriov binding method: both halves.
package sriov
