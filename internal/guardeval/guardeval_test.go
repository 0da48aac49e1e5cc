package guardeval

import "testing"

// The ARN matching of constructs/queues' TestArnLike, for the characters
// a regular expression would read as its own: only * and ? are wildcards.
func TestArnLikeTakesOtherCharactersLiterally(t *testing.T) {
	for _, c := range []struct {
		pattern, arn string
		want         bool
	}{
		{"arn:aws:events:eu-west-1:1:rule/a.b", "arn:aws:events:eu-west-1:1:rule/axb", false},
		{"arn:aws:events:eu-west-1:1:rule/[a]", "arn:aws:events:eu-west-1:1:rule/[a]", true},
		{"arn:aws:events:eu-west-1:1:rule/a+", "arn:aws:events:eu-west-1:1:rule/aa", false},
		{"arn:aws:iam::1:role/*", "arn:aws:iam::1:role/identidad/otro", true},
	} {
		if got := ArnLike(c.pattern, c.arn); got != c.want {
			t.Errorf("ArnLike(%q, %q) = %v, want %v", c.pattern, c.arn, got, c.want)
		}
	}
}
