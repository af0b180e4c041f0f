package docs_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"playbook/submit"
)

// validateLine is a GETTING_STARTED line `$ playbook validate mine.yaml #
// X written Y`: mine.yaml is playbooks/hello.yaml with X written Y.
var validateLine = regexp.MustCompile(`^\$ playbook validate mine\.yaml\s+# (.+) written (.+)$`)

// The mistakes docs/GETTING_STARTED.md makes in a copy of hello.yaml are
// told as it prints them, and nothing else is.
func TestGettingStartedMistakesAreToldAsShown(t *testing.T) {
	guide, err := os.ReadFile("GETTING_STARTED.md")
	if err != nil {
		t.Fatal(err)
	}
	hello, err := os.ReadFile("../playbooks/hello.yaml")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(guide), "\n")
	seen := 0
	for i, l := range lines {
		m := validateLine.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		seen++
		var want []string
		for _, o := range lines[i+1:] {
			if strings.HasPrefix(o, "$ ") || strings.HasPrefix(o, "```") {
				break
			}
			want = append(want, o)
		}
		src := strings.Replace(string(hello), m[1], m[2], 1)
		if src == string(hello) {
			t.Fatalf("GETTING_STARTED.md:%d: hello.yaml has no %q to write %q", i+1, m[1], m[2])
		}
		_, err := submit.ParseStrict("mine.yaml", []byte(src), "")
		if err == nil {
			t.Fatalf("GETTING_STARTED.md:%d: hello.yaml with %q written %q validates", i+1, m[1], m[2])
		}
		if got := err.Error(); got != strings.Join(want, "\n") {
			t.Errorf("GETTING_STARTED.md:%d shows:\n%s\nvalidate says:\n%s", i+1, strings.Join(want, "\n"), got)
		}
	}
	if seen == 0 {
		t.Fatal("GETTING_STARTED.md shows no `playbook validate mine.yaml` line")
	}
}
