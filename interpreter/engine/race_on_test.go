//go:build race

package engine

// raceDetector: the tests run under -race, ten times slower or more; a
// bound on time is not asked then.
const raceDetector = true
