package testsuite

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// browserPage is one page of a headless Chromium driven over the DevTools
// protocol on a pipe (--remote-debugging-pipe: NUL-terminated JSON, no
// websocket). It reads the page as it stands, where --dump-dom waits for
// the page to go quiet: the page of an open run keeps polling the server,
// so it never does.
type browserPage struct {
	t       *testing.T
	cmd     *exec.Cmd
	in      *os.File
	out     *bufio.Reader
	session string
	next    int
}

func openBrowserPage(t *testing.T, browser, url string) *browserPage {
	t.Helper()
	toBrowser, in, err := os.Pipe()
	require.NoError(t, err)
	out, fromBrowser, err := os.Pipe()
	require.NoError(t, err)
	// Chromium's helper processes may still write its profile after it
	// exits: the profile is removed as well as can be, not by t.TempDir.
	profile, err := os.MkdirTemp("", "playbook-chromium")
	require.NoError(t, err)
	cmd := exec.Command(browser, "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe",
		"--user-data-dir="+profile, "--window-size=1400,1000", "about:blank")
	cmd.ExtraFiles = []*os.File{toBrowser, fromBrowser} // fds 3 and 4
	require.NoError(t, cmd.Start())
	toBrowser.Close()
	fromBrowser.Close()
	p := &browserPage{t: t, cmd: cmd, in: in, out: bufio.NewReader(out)}
	t.Cleanup(func() {
		_ = in.Close() // Chromium exits when its pipe closes
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		time.Sleep(500 * time.Millisecond)
		_ = os.RemoveAll(profile)
	})
	var target struct {
		TargetID string `json:"targetId"`
	}
	p.call("", "Target.createTarget", map[string]any{"url": url}, &target)
	var attached struct {
		SessionID string `json:"sessionId"`
	}
	p.call("", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &attached)
	p.session = attached.SessionID
	return p
}

// call sends one command and reads its answer, skipping events.
func (p *browserPage) call(session, method string, params any, result any) {
	p.t.Helper()
	msg := p.try(session, method, params, result)
	require.Empty(p.t, msg, "%s: %s", method, msg)
}

// try sends one command and reads its answer, skipping events; it returns
// the error the browser answered with, or "".
func (p *browserPage) try(session, method string, params any, result any) string {
	p.t.Helper()
	p.next++
	msg := map[string]any{"id": p.next, "method": method, "params": params}
	if session != "" {
		msg["sessionId"] = session
	}
	b, err := json.Marshal(msg)
	require.NoError(p.t, err)
	_, err = p.in.Write(append(b, 0))
	require.NoError(p.t, err)
	for {
		line, err := p.out.ReadBytes(0)
		require.NoError(p.t, err, "chromium's DevTools pipe")
		var answer struct {
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		require.NoError(p.t, json.Unmarshal(line[:len(line)-1], &answer))
		if answer.ID != p.next {
			continue
		}
		if answer.Error != nil {
			return answer.Error.Message
		}
		if result != nil {
			require.NoError(p.t, json.Unmarshal(answer.Result, result))
		}
		return ""
	}
}

// text is the page's rendered text now, with its frames' (the Web UI
// renders a workflow's Markdown details in a sandboxed frame). A page
// between two documents (a reload, a link followed) has no text yet: the
// browser answers that the target navigated, or that its context is gone.
func (p *browserPage) text() string {
	p.t.Helper()
	var r struct {
		Result struct {
			Value string `json:"value"`
		} `json:"result"`
	}
	msg := p.try(p.session, "Runtime.evaluate", map[string]any{"expression": pageText, "returnByValue": true}, &r)
	if strings.Contains(msg, "navigated") || strings.Contains(msg, "context with specified id") || strings.Contains(msg, "context was destroyed") {
		return ""
	}
	require.Empty(p.t, msg, "Runtime.evaluate: %s", msg)
	return r.Result.Value
}

// waitForText waits until the page's text holds every one of want, and
// returns it.
func (p *browserPage) waitForText(within time.Duration, want ...string) string {
	p.t.Helper()
	deadline := time.Now().Add(within)
	for {
		text := p.text()
		missing := ""
		for _, w := range want {
			if !strings.Contains(text, w) {
				missing = w
				break
			}
		}
		if missing == "" {
			return text
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("the page does not show %q within %s; it shows:\n%s", missing, within, text)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// screenshot saves the page as a PNG.
func (p *browserPage) screenshot(file string) {
	var r struct {
		Data string `json:"data"`
	}
	p.call(p.session, "Page.captureScreenshot", map[string]any{"format": "png"}, &r)
	b, err := base64.StdEncoding.DecodeString(r.Data)
	require.NoError(p.t, err)
	require.NoError(p.t, os.WriteFile(file, b, 0o644), fmt.Sprintf("screenshot %s", file))
}

// click clicks the first link or button whose text is label.
func (p *browserPage) click(label string) {
	p.t.Helper()
	var r struct {
		Result struct {
			Value bool `json:"value"`
		} `json:"result"`
	}
	js := fmt.Sprintf(`(() => { const e = [...document.querySelectorAll('a, button, [role=tab]')].find(e => e.innerText.trim() === %q); if (e) { e.click(); } return !!e; })()`, label)
	p.call(p.session, "Runtime.evaluate", map[string]any{"expression": js, "returnByValue": true}, &r)
	require.True(p.t, r.Result.Value, "no link or button %q on the page", label)
}

const pageText = `(document.body ? document.body.innerText : '') + [...document.querySelectorAll('iframe')].map(f => {
	try { return '\n' + f.contentDocument.body.innerText } catch (e) { return '\n' + new DOMParser().parseFromString(f.srcdoc || '', 'text/html').body.textContent }
}).join('')`
