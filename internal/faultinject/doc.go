// Package faultinject wraps a netdriver.Driver to inject faults: [Driver]
// runs a hook before every call, which can fail it, kill the process or
// delete the namespace under it, and one after, which sees each call's
// duration and error. The reliability suite (package reliability) kills
// phase1 at every kernel step with it, and bench/cmd/phase1bench times
// kernel calls with it. It is a test and benchmark tool, hence internal.
package faultinject
