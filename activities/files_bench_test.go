package activities

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"playbook/internal/proctest"
	"playbook/internal/store"
	"playbook/interpreter/contract"
)

// handOffBytes is the size of the file BenchmarkFileHandOff passes.
const handOffBytes = 100 << 20

// BenchmarkFileHandOff passes a 100 MB file from one step to the next
// as their attempts do, through the run's store: the first hands it on
// (hashed, then uploaded), the second takes it (downloaded into its
// working directory, its digest checked); it reports MB/s of the whole.
// The steps' commands and Temporal's round trips are left out: they do
// not grow with the file. On the local store always; on an S3 server
// when PLAYBOOK_VERSITYGW names a VersityGW binary (make test-cluster
// builds bin/tools/versitygw, and make bench passes it when it is there).
func BenchmarkFileHandOff(b *testing.B) {
	src := b.TempDir()
	f, err := os.Create(filepath.Join(src, "data.bin"))
	if err != nil {
		b.Fatal(err)
	}
	if _, err := f.ReadFrom(&limitedRand{n: handOffBytes}); err != nil {
		b.Fatal(err)
	}
	f.Close()
	stores := map[string]string{"local": "file://" + b.TempDir()}
	if bin := os.Getenv(proctest.VersityVar); bin != "" {
		url, _ := proctest.Versity(b, bin)
		for _, kv := range proctest.VersityCredentials {
			k, v, _ := strings.Cut(kv, "=")
			b.Setenv(k, v)
		}
		stores["s3"] = url
	}
	for _, name := range []string{"local", "s3"} {
		url, ok := stores[name]
		if !ok {
			fmt.Printf("file hand-off on the S3 server: skipped (%s is not set; make test-cluster builds it)\n", proctest.VersityVar)
			continue
		}
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			st, err := store.Open(ctx, url)
			if err != nil {
				b.Fatal(err)
			}
			a := &Activities{Store: st}
			b.SetBytes(handOffBytes)
			var spent time.Duration
			for i := 0; b.Loop(); i++ {
				run := fmt.Sprintf("bench-%d-%d", time.Now().UnixNano(), i)
				dst := b.TempDir()
				began := time.Now()
				files, stepErr := a.handOn(ctx, contract.StepInput{WorkflowID: run, Step: "make", BaseDir: src, Files: &contract.StepFiles{Outputs: []string{"data.bin"}}})
				if stepErr != nil {
					b.Fatal(stepErr.Message)
				}
				if stepErr := a.takeInputs(ctx, contract.StepInput{WorkflowID: run, Step: "use", BaseDir: dst, Files: &contract.StepFiles{Inputs: files}}); stepErr != nil {
					b.Fatal(stepErr.Message)
				}
				spent += time.Since(began)
				if _, err := st.Delete(ctx, run); err != nil {
					b.Fatal(err)
				}
			}
			mbps := float64(handOffBytes) * float64(b.N) / spent.Seconds() / 1e6
			fmt.Printf("file hand-off of 100 MB between two steps, %s store: %.0f MB/s\n", name, mbps)
		})
	}
}

// limitedRand reads n random bytes.
type limitedRand struct{ n int64 }

func (r *limitedRand) Read(p []byte) (int, error) {
	if r.n <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > r.n {
		p = p[:r.n]
	}
	n, err := rand.Read(p)
	r.n -= int64(n)
	return n, err
}
