// Package nsexec runs a function inside another network namespace on a
// locked OS thread ([Do]), the way CNI's pkg/ns does: the only safe way to
// use setns(2) from Go. A [Thread] stays in one namespace for many calls.
package nsexec
