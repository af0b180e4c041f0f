package commands

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"slices"

	enumspb "go.temporal.io/api/enums/v1"

	"playbook/internal/codec"
)

// A client with a codec key says so in its identity, and so does every
// worker, whose pollers the server lists with their identities: that is
// how a CLI learns, before it submits, that the workers encrypt payloads.
// The key's ID is the one each encrypted payload carries already.
var codecInIdentity = regexp.MustCompile(`\bcodec:([0-9a-f]{8})\b`)

// codecIdentity is identity (default "PID@HOST", the SDK's) with the key's
// ID: "4242@build-1 codec:1a2b3c4d".
func codecIdentity(identity string, c *codec.AESGCM) string {
	if identity == "" {
		host, _ := os.Hostname()
		identity = fmt.Sprintf("%d@%s", os.Getpid(), host)
	}
	return identity + " codec:" + c.KeyID()
}

// checkCodec refuses to submit (exit 2) what the workers could not read,
// or would leave in plain text: the workers polling queue encrypt payloads
// and this CLI has no key, or another key; or the envconfig profile names a
// codec and this CLI has no key. Without pollers to ask it says nothing
// (warnWithoutWorker does), and nor does a CLI running its own worker.
func (c *connection) checkCodec(ctx context.Context, queue string) error {
	if c.worker != nil {
		return nil
	}
	var theirs []string
	if resp, err := c.client.DescribeTaskQueue(ctx, queue, enumspb.TASK_QUEUE_TYPE_WORKFLOW); err == nil {
		for _, p := range resp.GetPollers() {
			if m := codecInIdentity.FindStringSubmatch(p.GetIdentity()); m != nil && !slices.Contains(theirs, m[1]) {
				theirs = append(theirs, m[1])
			}
		}
	}
	const share = "give the CLI the workers' key (PLAYBOOK_CODEC_KEY_FILE=FILE or PLAYBOOK_CODEC_KEY; docs/SECURITY.md, Histories in ciphertext); nothing was started"
	switch {
	case c.codec == nil && len(theirs) > 0:
		return invalidf("the workers polling task queue %q encrypt payloads (codec key %s) and this CLI has no key: it would send the workload in plain text and could not read the outcome; %s",
			queue, theirs[0], share)
	case c.codec == nil && c.profileCodec != "":
		return invalidf("the Temporal profile names a codec (%s), so this namespace's payloads are encoded, and this CLI has no key: it would send the workload in plain text; %s",
			c.profileCodec, share)
	case c.codec != nil && len(theirs) > 0 && !slices.Contains(theirs, c.codec.KeyID()):
		return invalidf("the workers polling task queue %q encrypt payloads with codec key %s, and this CLI's key is %s: they could not read the run; %s",
			queue, theirs[0], c.codec.KeyID(), share)
	}
	return nil
}
