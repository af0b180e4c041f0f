package interpreter

// Env is what step expressions and templates see.
func (r *Run) Env() map[string]any {
	return map[string]any{
		"workload":     r.workload,
		"steps":        r.stepsEnv(),
		"execution_id": r.executionID,
		"playbook":     map[string]any{"name": r.pb.Name, "description": r.pb.Description},
	}
}

// EndEnv is what `end`'s success_when and tool see.
func (r *Run) EndEnv() map[string]any {
	env := r.Env()
	failed := r.failedSteps()
	env["failed_steps"] = failed
	env["failed_steps_count"] = len(failed)
	env["total_steps"] = len(r.pb.Steps) - 1
	return env
}

func (r *Run) failedSteps() []string {
	failed := []string{}
	for _, s := range r.pb.Steps {
		if s.Name != EndStep && r.states[s.Name].Status == StatusFailed {
			failed = append(failed, s.Name)
		}
	}
	return failed
}

// RenderTool renders a step's tool fields against the run's current state.
func (r *Run) RenderTool(s *Step) (map[string]any, error) {
	env := r.Env()
	if s.Name == EndStep {
		env = r.EndEnv()
	}
	out, err := renderValue(s.Tool.Spec, r.pb.templates, env)
	if err != nil {
		return nil, err
	}
	return out.(map[string]any), nil
}
