package cli

import (
	"bytes"
	"strings"
	"testing"
)

// Styled output reaches the stream as plain text when NO_COLOR is set, even
// where the terminal profile would allow colour (forced here with
// CLICOLOR_FORCE), and carries escapes otherwise.
func TestNoColorStripsEveryEscape(t *testing.T) {
	for _, tc := range []struct {
		env         []string
		wantEscapes bool
	}{
		{[]string{"CLICOLOR_FORCE=1", "TERM=xterm-256color"}, true},
		{[]string{"CLICOLOR_FORCE=1", "TERM=xterm-256color", "NO_COLOR=1"}, false},
	} {
		var out, errb bytes.Buffer
		ios := newIO(nil, &out, &errb, tc.env)
		ios.Out.Write([]byte(styleBad.Render("bad") + " " + styleHeader.Render("head") + "\n"))
		ios.warnf("careful")
		got := out.String() + errb.String()
		if has := strings.Contains(got, "\x1b["); has != tc.wantEscapes {
			t.Errorf("env %v: escapes present = %v, want %v: %q", tc.env, has, tc.wantEscapes, got)
		}
		if !strings.Contains(got, "bad") || !strings.Contains(got, "head") || !strings.Contains(got, "warning: careful") {
			t.Errorf("env %v: text lost: %q", tc.env, got)
		}
	}
}
