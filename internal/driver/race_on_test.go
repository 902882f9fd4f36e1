//go:build race

package driver_test

// raceEnabled: the race detector's instrumentation allocates, so the
// allocation counts are not the program's.
const raceEnabled = true
