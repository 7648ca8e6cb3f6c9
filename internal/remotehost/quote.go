package remotehost

import (
	"fmt"
	"strings"
)

// shellQuote quotes s as one word for a POSIX shell: unchanged when every
// byte is one the shell never treats specially, else in single quotes,
// where each single quote inside ends the quoted part, is written
// backslash-escaped, and starts a new quoted part.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool { return !safeRune(r) }) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// safeRune reports whether r needs no quoting anywhere in a word. '=' and
// '~' are left out: "a=b" as a first word is an assignment, and a leading
// ~ expands.
func safeRune(r rune) bool {
	switch {
	case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9':
		return true
	}
	return strings.ContainsRune("_@%+:,./-", r)
}

// QuoteArgv joins argv into one command line that a POSIX shell splits
// back into exactly argv. It refuses an empty argv and arguments holding a
// NUL byte, which no argv can carry.
func QuoteArgv(argv []string) (string, error) {
	if len(argv) == 0 {
		return "", fmt.Errorf("remotehost: empty argv: give the program to run")
	}
	q := make([]string, len(argv))
	for i, a := range argv {
		if strings.IndexByte(a, 0) >= 0 {
			return "", fmt.Errorf("remotehost: argument %d of %q holds a NUL byte, which no command line can carry", i, argv[0])
		}
		q[i] = shellQuote(a)
	}
	return strings.Join(q, " "), nil
}
