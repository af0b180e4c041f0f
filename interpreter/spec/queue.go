package spec

import (
	"regexp"

	"go.yaml.in/yaml/v3"
)

// queuePattern is what a task queue's name may be: letters, digits, '.',
// '_' and '-', as a name written in a command line or a deployment.
var queuePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// maxQueueName bounds a task queue's name (Temporal allows 1000 bytes).
const maxQueueName = 200

func sQueue(desc string) jsonSchema {
	return jsonSchema{"type": "string", "pattern": queuePattern.String(), "maxLength": maxQueueName, "description": desc}
}

// queue reads a task queue's name.
func (d *decoder) queue(v *yaml.Node, out *string) error {
	if err := d.str(v, "queue", out); err != nil {
		return err
	}
	if len(*out) > maxQueueName || !queuePattern.MatchString(*out) {
		return d.errf(v, "queue %q is not a task queue's name: letters, digits, '.', '_' and '-', at most %d bytes", *out, maxQueueName)
	}
	return nil
}
