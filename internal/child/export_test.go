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

// GuardScript is the shell guard's program.
const GuardScript = guardScript
