package child

// GuardLoop is the guard's program without its signal handling, for tests
// that run it in the test process.
var GuardLoop = guardLoop

// SetGuardShell sets the shell that runs the guard ("" for lockctl's own
// binary) and returns a function that restores it.
func SetGuardShell(sh string) func() {
	old := guardShell
	guardShell = sh
	return func() { guardShell = old }
}

// GuardScript is the shell guard's program: the helper's.
const GuardScript = helperScript

// Polls is how many times the child's wait slept for its group to go;
// valid once Done has closed.
func (c *Child) Polls() int { return c.polls }

// HasWitness reports whether the child's group got a witness (a helper).
func (c *Child) HasWitness() bool { return c.witness != nil }

// WaitStarted waits until h's start has been tried.
func WaitStarted(h *Helper) { h.ready() }
