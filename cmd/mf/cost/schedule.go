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
		mins, err := cronCount(f[0], 0, 59)
		if err != nil {
			return 0, fmt.Errorf("schedule %q: minutes: %w", expr, err)
		}
		hrs, err := cronCount(f[1], 0, 23)
		if err != nil {
			return 0, fmt.Errorf("schedule %q: hours: %w", expr, err)
		}
		perDay := mins * hrs
		dom, dow, month := f[2], f[4], f[3]
		var daysFiring float64
		switch {
		case (dom == "*" || dom == "?") && (dow == "*" || dow == "?"):
			daysFiring = days
		case dom != "*" && dom != "?":
			n, err := cronCount(dom, 1, 31)
			if err != nil {
				return 0, fmt.Errorf("schedule %q: day of month: %w", expr, err)
			}
			daysFiring = n * days / 30.4375
		default:
			n, err := cronCount(dow, 1, 7)
			if err != nil {
				return 0, fmt.Errorf("schedule %q: day of week: %w", expr, err)
			}
			daysFiring = n * days / 7
		}
		if month != "*" {
			n, err := cronCount(month, 1, 12)
			if err != nil {
				return 0, fmt.Errorf("schedule %q: month: %w", expr, err)
			}
			daysFiring *= n / 12
		}
		return perDay * daysFiring, nil
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
