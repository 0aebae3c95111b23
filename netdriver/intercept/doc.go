// Package intercept wraps a [netdriver.Driver] with hooks around every
// call: [Driver] runs one before each call, which can refuse it (or kill
// the process, or delete the namespace under it), and one after, which
// sees each call's duration and error.
//
// It is product code first: the binding CNI plugin's CHECK runs phase1
// through it as a dry run, refusing every mutating call to learn what ADD
// would repair. The reliability suite (package reliability) kills phase1
// at every kernel step with it, and bench/cmd/phase1bench times kernel
// calls with it.
package intercept
