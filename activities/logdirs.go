package activities

import (
	"os"
	"path/filepath"
	"regexp"
)

// StepLogDir is where a step's attempts in one run keep their logs:
// LOGDIR/<workflow id>/<run id>/<step>, so that a run reusing an ended
// run's workflow ID never writes over that run's logs. A step input
// without a run ID (from a run started before inputs carried one) logs in
// LOGDIR/<workflow id>/<step>.
func StepLogDir(logDir, workflowID, runID, step string) string {
	return filepath.Join(logDir, workflowID, runID, step)
}

// RunLogDir is the directory holding a run's step directories, for
// reading: runID's, or with runID "" the latest run's (the run directory
// last written to), else LOGDIR/<workflow id> itself, where runs from
// before kept them.
func RunLogDir(logDir, workflowID, runID string) string {
	dir := filepath.Join(logDir, workflowID)
	if runID != "" {
		return filepath.Join(dir, runID)
	}
	entries, _ := os.ReadDir(dir)
	latest, latestName := int64(0), ""
	for _, e := range entries {
		if !e.IsDir() || !runIDName.MatchString(e.Name()) {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		if t := info.ModTime().UnixNano(); t > latest || (t == latest && e.Name() > latestName) {
			latest, latestName = t, e.Name()
		}
	}
	return filepath.Join(dir, latestName)
}

// IsRunIDName tells whether a directory under a workflow ID's is a run's
// (named by its run ID), not a step's of the layout from before.
func IsRunIDName(name string) bool { return runIDName.MatchString(name) }

// runIDName is the shape of a run ID (a UUID) as a directory name; a step
// directory of the layout from before is named as its step, which a run
// ID's shape is not.
var runIDName = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
