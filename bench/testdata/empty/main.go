// Command empty does nothing: the floor of a Go program's start-up and
// package initialisation, against which BenchmarkCNIStartup measures the
// CNI plugins.
package main

func main() {}
