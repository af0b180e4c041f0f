package playtest

import (
	"testing"
	"time"
)

// BenchmarkTwentyCases runs a suite of 20 cases of the examples (retries,
// approvals, loops, sub-playbooks, deadlines), as `playbook test` does:
// `make bench` prints its time per suite. The goal is under 2 s.
func BenchmarkTwentyCases(b *testing.B) {
	files, err := Find([]string{"../../playbooks"})
	if err != nil {
		b.Fatal(err)
	}
	type picked struct {
		s *Suite
		c *Case
	}
	var cases []picked
	for _, f := range files {
		s, err := Load(f)
		if err != nil {
			b.Fatal(err)
		}
		for _, c := range s.File.Cases {
			if len(cases) < 20 {
				cases = append(cases, picked{s, c})
			}
		}
	}
	if len(cases) != 20 {
		b.Fatalf("the examples have %d cases, want 20", len(cases))
	}
	b.ResetTimer()
	began := time.Now()
	for i := 0; i < b.N; i++ {
		for _, p := range cases {
			if r := p.s.RunCase(p.c, Options{}); !r.Passed {
				b.Fatalf("case %q: %v", p.c.Name, r.Problems)
			}
		}
	}
	b.ReportMetric(time.Since(began).Seconds()/float64(b.N), "s/suite")
}
