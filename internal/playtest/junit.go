package playtest

import (
	"encoding/xml"
	"io"
	"strings"
)

type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Tests   int          `xml:"tests,attr"`
	Fails   int          `xml:"failures,attr"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name  string      `xml:"name,attr"`
	Tests int         `xml:"tests,attr"`
	Fails int         `xml:"failures,attr"`
	Cases []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	ClassName string        `xml:"classname,attr"`
	Time      float64       `xml:"time,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

// WriteJUnit writes the report as JUnit XML: a test suite per test file,
// a test case per case.
func (r *Report) WriteJUnit(w io.Writer) error {
	out := junitSuites{Tests: len(r.Results), Fails: r.Failed}
	index := map[string]int{}
	for _, res := range r.Results {
		i, ok := index[res.File]
		if !ok {
			i = len(out.Suites)
			index[res.File] = i
			out.Suites = append(out.Suites, junitSuite{Name: res.File})
		}
		s := &out.Suites[i]
		c := junitCase{Name: res.Case, ClassName: res.File, Time: res.Duration.Seconds(), SystemOut: strings.Join(res.Log, "\n")}
		s.Tests++
		if !res.Passed {
			s.Fails++
			c.Failure = &junitFailure{Message: res.Problems[0], Text: strings.Join(res.Problems, "\n") + "\n\n" + res.Steps}
		}
		s.Cases = append(s.Cases, c)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(out); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}
