package docs_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var (
	// inlineLink is [text](target) or ![alt](target), with an optional title.
	inlineLink = regexp.MustCompile(`\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	// refLink is a reference definition: [name]: target
	refLink = regexp.MustCompile(`(?m)^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)`)
	// htmlLink is an href or src attribute.
	htmlLink   = regexp.MustCompile(`(?i)\b(?:href|src)\s*=\s*"([^"]+)"`)
	codeSpan   = regexp.MustCompile("`+[^`]*`+")
	heading    = regexp.MustCompile(`(?m)^#{1,6}\s+(.+?)\s*#*\s*$`)
	notInSlug  = regexp.MustCompile(`[^\p{L}\p{N} _-]`)
	linkInText = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
	scheme     = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)
)

// TestMarkdownLinksStayInTheRepository checks every link of every Markdown
// file of the repository: a relative link must name a file inside the
// repository that exists (and, with a #fragment into Markdown, a heading
// of it); a link may also be an http(s) URL. Anything else (an absolute
// path, a file: URL, a path that climbs out of the repository) is a link
// someone who clones the project cannot follow.
func TestMarkdownLinksStayInTheRepository(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(d.Name(), ".md") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 2 {
		t.Fatalf("found %d Markdown files under %s; expected the README and docs/", len(files), root)
	}
	checked := 0
	for _, file := range files {
		rel, _ := filepath.Rel(root, file)
		for _, target := range markdownLinks(t, file) {
			checked++
			if problem := checkLink(root, file, target); problem != "" {
				t.Errorf("%s: link %q %s", rel, target, problem)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no link found: the link reader is broken")
	}
}

// checkLink says what is wrong with a link of file, or "".
func checkLink(root, file, target string) string {
	switch {
	case strings.HasPrefix(target, "https://"), strings.HasPrefix(target, "http://"), strings.HasPrefix(target, "mailto:"):
		return ""
	case scheme.MatchString(target):
		return "is not an http(s) URL nor a path in the repository"
	case strings.HasPrefix(target, "/"):
		return "is an absolute path: write a path relative to the file"
	}
	path, fragment, _ := strings.Cut(target, "#")
	dest := file
	if path != "" {
		dest = filepath.Join(filepath.Dir(file), filepath.FromSlash(path))
		if r, err := filepath.Rel(root, dest); err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
			return "points outside the repository"
		}
		if _, err := os.Stat(dest); err != nil {
			return "names a file that does not exist"
		}
	}
	if fragment != "" && strings.HasSuffix(dest, ".md") {
		if !anchors(dest)[fragment] {
			return "names a heading that does not exist"
		}
	}
	return ""
}

// markdownLinks lists a file's link targets outside code blocks and code
// spans.
func markdownLinks(t *testing.T, file string) []string {
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, re := range []*regexp.Regexp{inlineLink, refLink, htmlLink} {
		for _, m := range re.FindAllStringSubmatch(prose(string(b), false), -1) {
			out = append(out, m[1])
		}
	}
	return out
}

// prose is a Markdown text without its fenced code blocks (a # there is
// no heading, a link no link) and, unless keepSpans, its code spans.
func prose(text string, keepSpans bool) string {
	var b strings.Builder
	fenced := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			if !keepSpans {
				line = codeSpan.ReplaceAllString(line, "code")
			}
			b.WriteString(line)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// anchors are the fragments a Markdown file's headings get on GitHub:
// lower case, punctuation dropped, spaces made hyphens, -1, -2... for
// repeats.
func anchors(file string) map[string]bool {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil
	}
	out := map[string]bool{}
	seen := map[string]int{}
	for _, m := range heading.FindAllStringSubmatch(prose(string(b), true), -1) {
		text := linkInText.ReplaceAllString(m[1], "$1")
		slug := strings.ReplaceAll(notInSlug.ReplaceAllString(strings.ToLower(text), ""), " ", "-")
		if n := seen[slug]; n > 0 {
			out[slug+"-"+strconv.Itoa(n)] = true
		} else {
			out[slug] = true
		}
		seen[slug]++
	}
	return out
}
