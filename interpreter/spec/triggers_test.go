package spec

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A trigger is a webhook with a name and a secret, or an after with a
// playbook and statuses; each mistake is one line naming it.
func TestTriggersParse(t *testing.T) {
	pb, err := Parse("flows/x.yaml", []byte(`
metadata: {name: x}
triggers:
  - webhook: {name: deploy, secret: {secret: hook_key}}
  - after: {playbook: extract}
  - after: {playbook: other, status: [failed, timed_out]}
workflow:
  - step: a
    tool: {kind: noop, result: "{{ trigger.run_id }}"}
`))
	require.NoError(t, err)
	require.Equal(t, []Trigger{
		{Line: 4, Webhook: &WebhookTrigger{Name: "deploy", Secret: "hook_key"}},
		{Line: 5, After: &AfterTrigger{Playbook: "extract", Status: []string{"completed"}}},
		{Line: 6, After: &AfterTrigger{Playbook: "other", Status: []string{"failed", "timed_out"}}},
	}, pb.Triggers)

	for name, c := range map[string]struct{ triggers, want string }{
		"both":         {`[{webhook: {name: a, secret: {secret: k}}, after: {playbook: b}}]`, `flows/x.yaml:2: a trigger is either webhook: or after:, one of them`},
		"neither":      {`[{}]`, `flows/x.yaml:2: a trigger is either webhook: or after:, one of them`},
		"no secret":    {`[{webhook: {name: a}}]`, `flows/x.yaml:2: triggers: webhook "a" needs secret: {secret: NAME}, the worker's secret its deliveries are signed with`},
		"plain secret": {`[{webhook: {name: a, secret: hunter2}}]`, `flows/x.yaml:2: webhook.secret must be {secret: NAME}, the name of a file in the worker's secrets directory`},
		"bad name":     {`[{webhook: {name: A/b, secret: {secret: k}}}]`, `flows/x.yaml:2: triggers: webhook.name "A/b" must match [a-z0-9][a-z0-9_-]*`},
		"long name":    {`[{webhook: {name: ` + strings.Repeat("h", 101) + `, secret: {secret: k}}}]`, `flows/x.yaml:2: triggers: webhook.name is 101 bytes, over the limit of 100`},
		"twice":        {"\n  - webhook: {name: a, secret: {secret: k}}\n  - webhook: {name: a, secret: {secret: k}}", `flows/x.yaml:4: triggers: webhook "a" given twice (first at line 3)`},
		"bad status":   {`[{after: {playbook: b, status: [done]}}]`, `flows/x.yaml:2: after.status "done" is not how a run ends ([completed completed_with_warnings failed cancelled terminated timed_out])`},
		"unknown key":  {`[{after: {playbook: b, when: x}}]`, `flows/x.yaml:2: unknown key "when" in triggers: after (known: playbook, status)`},
		"not a list":   {`{after: {playbook: b}}`, `flows/x.yaml:2: triggers must be a list of {webhook: ...} or {after: ...}`},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse("flows/x.yaml", []byte("metadata: {name: x}\ntriggers: "+c.triggers+"\nworkflow:\n  - step: a\n"))
			require.EqualError(t, err, c.want)
		})
	}
}
