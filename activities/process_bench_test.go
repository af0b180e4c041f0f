package activities

import (
	"context"
	"fmt"
	"os/exec"
	"sync/atomic"
	"testing"

	"playbook/internal/proctest"
	"playbook/interpreter/contract"
)

// BenchmarkShellTrue runs `sh -c true` as a shell step's attempt does (its
// log files, its process group, the keeper) and bare, ten at a time as the
// bench's loop does: the difference is what the step's machinery costs.
func BenchmarkShellTrue(b *testing.B) {
	fmt.Println("disk:", proctest.SettleDisk(b))
	b.Run("step", func(b *testing.B) {
		a := &Activities{LogDir: b.TempDir()}
		base := b.TempDir()
		var n atomic.Int64
		b.ResetTimer()
		b.SetParallelism(5)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				in := contract.StepInput{WorkflowID: "wf", Step: fmt.Sprintf("s%d", n.Add(1)), Kind: "shell", Spec: map[string]any{"command": "true"}, BaseDir: base}
				if o := a.runTool(context.Background(), in, 1); o.Err != nil {
					b.Fatal(o.Err)
				}
			}
		})
	})
	b.Run("bare", func(b *testing.B) {
		b.SetParallelism(5)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := exec.Command("/bin/sh", "-c", "true").Run(); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
}
