package core

import (
	"cmp"
	"fmt"
	"math"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// Problems collects what is wrong with a construct's props: each problem is
// an error annotation on the construct, "<kind> <path>: <problem>", so
// synthesis fails listing every one of them.
type Problems struct {
	scope  constructs.IConstruct
	prefix string
	n      int
}

// Check starts the validation of the construct scope of kind ("payment").
func Check(scope constructs.IConstruct, kind string) *Problems {
	return &Problems{scope: scope, prefix: kind + " " + *scope.Node().Path() + ": "}
}

// Addf reports a problem.
func (p *Problems) Addf(format string, a ...any) {
	p.n++
	awscdk.Annotations_Of(p.scope).AddError(jsii.String(p.prefix + fmt.Sprintf(format, a...)))
}

// If reports the problem when bad, and returns bad.
func (p *Problems) If(bad bool, format string, a ...any) bool {
	if bad {
		p.Addf(format, a...)
	}
	return bad
}

// OK reports whether no problem was found.
func (p *Problems) OK() bool { return p.n == 0 }

// Count is v, or def when v is 0: a whole number in lo..hi, else reported
// (and def returned).
func (p *Problems) Count(field string, v, def, lo, hi float64) float64 {
	v = cmp.Or(v, def)
	if v < lo || v > hi || v != math.Trunc(v) {
		p.Addf("%s must be an integer in %v..%v, got %v", field, lo, hi, v)
		return def
	}
	return v
}

// Seconds is d in seconds, or def when d is nil: a literal duration
// between lo and hi seconds, else reported (and def returned).
func (p *Problems) Seconds(field string, d awscdk.Duration, def, lo, hi float64) float64 {
	if d == nil {
		return def
	}
	s, err := Seconds(d)
	switch {
	case err != nil:
		p.Addf("%s must be a literal duration: %v", field, err)
	case s < lo || s > hi:
		p.Addf("%s must be between %s and %s, got %s", field, Human(lo), Human(hi), Human(s))
	default:
		return s
	}
	return def
}

// Human writes seconds as "90 s", "2 min" or "24 h".
func Human(s float64) string {
	switch {
	case s >= 3600 && math.Mod(s, 3600) == 0:
		return fmt.Sprintf("%v h", s/3600)
	case s >= 60 && math.Mod(s, 60) == 0:
		return fmt.Sprintf("%v min", s/60)
	default:
		return fmt.Sprintf("%v s", s)
	}
}

// Seconds converts a literal Duration to seconds without panicking on an
// unresolved token or a fractional value.
func Seconds(d awscdk.Duration) (secs float64, err error) {
	if d == nil {
		return 0, fmt.Errorf("duration is nil")
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("duration %v cannot be converted to seconds: %v", *d.ToHumanString(), r)
		}
	}()
	return *d.ToSeconds(&awscdk.TimeConversionOptions{Integral: jsii.Bool(false)}), nil
}

// Begin starts a constructor: the construct id under scope, the validator
// of kind on it, and props, or the zero value when nil (every constructor
// takes nil props: all defaults, and the required fields reported).
func Begin[P any](scope constructs.Construct, id, kind string, props *P) (constructs.Construct, *Problems, *P) {
	if props == nil {
		props = new(P)
	}
	c := constructs.NewConstruct(scope, jsii.String(id))
	return c, Check(c, kind), props
}
