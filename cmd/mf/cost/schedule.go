package cost

import (
	"fmt"
	"strconv"
	"strings"
)

// perMonth is how many times a schedule expression ("rate(1 minute)",
// "cron(15 4 * * ? *)", "at(...)") fires in a month of hours hours.
func perMonth(expr string, hours float64) (float64, error) {
	days := hours / 24
	switch {
	case strings.HasPrefix(expr, "rate(") && strings.HasSuffix(expr, ")"):
		f := strings.Fields(expr[len("rate(") : len(expr)-1])
		if len(f) != 2 {
			return 0, fmt.Errorf("schedule %q: want rate(<n> <unit>)", expr)
		}
		n, err := strconv.ParseFloat(f[0], 64)
		if err != nil || n <= 0 {
			return 0, fmt.Errorf("schedule %q: bad rate value", expr)
		}
		unit := map[string]float64{"minute": 60, "minutes": 60, "hour": 3600, "hours": 3600, "day": 86400, "days": 86400}[f[1]]
		if unit == 0 {
			return 0, fmt.Errorf("schedule %q: bad rate unit", expr)
		}
		return hours * 3600 / (n * unit), nil
	case strings.HasPrefix(expr, "cron(") && strings.HasSuffix(expr, ")"):
		f := strings.Fields(expr[len("cron(") : len(expr)-1])
		if len(f) != 6 {
			return 0, fmt.Errorf("schedule %q: want cron(<min> <hour> <day-of-month> <month> <day-of-week> <year>)", expr)
		}
		var n [5]float64 // minutes, hours, days of month, months, days of week
		for i, fld := range []struct {
			name   string
			lo, hi int
		}{{"minutes", 0, 59}, {"hours", 0, 23}, {"day of month", 1, 31}, {"month", 1, 12}, {"day of week", 1, 7}} {
			c, err := cronCount(f[i], fld.lo, fld.hi)
			if err != nil {
				return 0, fmt.Errorf("schedule %q: %s: %w", expr, fld.name, err)
			}
			n[i] = c
		}
		// The days it fires: those of the month it names, else those of
		// the week, else every day; in the months it names.
		daysFiring := days
		switch {
		case f[2] != "*" && f[2] != "?":
			daysFiring = n[2] * days / 30.4375
		case f[4] != "*" && f[4] != "?":
			daysFiring = n[4] * days / 7
		}
		if f[3] != "*" {
			daysFiring *= n[3] / 12
		}
		return n[0] * n[1] * daysFiring, nil
	case strings.HasPrefix(expr, "at("):
		return 0, nil // one time: nothing a month
	}
	return 0, fmt.Errorf("schedule %q is neither rate(), cron() nor at()", expr)
}

// cronCount is how many values of [lo, hi] a cron field selects: "*",
// "?", numbers, lists, ranges and steps ("0/15", "*/5", "1-5"). Named days
// and months count as one value each.
func cronCount(field string, lo, hi int) (float64, error) {
	if field == "*" || field == "?" {
		return float64(hi - lo + 1), nil
	}
	total := 0.0
	for _, part := range strings.Split(field, ",") {
		base, stepS, hasStep := strings.Cut(part, "/")
		step := 1
		if hasStep {
			s, err := strconv.Atoi(stepS)
			if err != nil || s <= 0 {
				return 0, fmt.Errorf("bad step in %q", part)
			}
			step = s
		}
		from, to := lo, hi
		switch {
		case base == "*":
		case strings.Contains(base, "-"):
			a, b, _ := strings.Cut(base, "-")
			x, err1 := strconv.Atoi(a)
			y, err2 := strconv.Atoi(b)
			if err1 != nil || err2 != nil || x > y {
				// Named ranges (MON-FRI) count by their length in days.
				if n := namedSpan(a, b); n > 0 {
					total += float64(n)
					continue
				}
				return 0, fmt.Errorf("bad range %q", base)
			}
			from, to = x, y
		default:
			x, err := strconv.Atoi(strings.TrimRight(base, "LW#"))
			if err != nil {
				total++ // a name (MON, JAN) or L/W/#: one value
				continue
			}
			from = x
			if !hasStep {
				to = x
			}
		}
		total += float64((to-from)/step + 1)
	}
	return total, nil
}

func namedSpan(a, b string) int {
	days := []string{"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"}
	ia, ib := -1, -1
	for i, d := range days {
		if strings.EqualFold(d, a) {
			ia = i
		}
		if strings.EqualFold(d, b) {
			ib = i
		}
	}
	if ia < 0 || ib < ia {
		return 0
	}
	return ib - ia + 1
}
