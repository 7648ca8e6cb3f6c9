package trend

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ParseSince reads a since filter: "" (no limit), a date, an RFC 3339 time, or
// an age in hours or days before now.
func ParseSince(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if t, err := time.ParseInLocation(time.DateOnly, s, time.Local); err == nil {
		return t, nil
	}
	if n, ok := strings.CutSuffix(s, "d"); ok {
		if d, err := strconv.Atoi(n); err == nil && d > 0 {
			return now.AddDate(0, 0, -d), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("--since %q: use a date (2026-01-31), an RFC 3339 time or an age such as 36h or 7d", s)
}

// ParseLabels reads repeated key=value filters.
func ParseLabels(ls []string) (map[string]string, error) {
	if len(ls) == 0 {
		return nil, nil
	}
	m := map[string]string{}
	for _, l := range ls {
		k, v, ok := strings.Cut(l, "=")
		if !ok || k == "" {
			return nil, errors.New("--label " + strconv.Quote(l) + ": use key=value, e.g. --label kernel_commit=abc123")
		}
		m[k] = v
	}
	return m, nil
}
